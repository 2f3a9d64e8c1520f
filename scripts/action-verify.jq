# Normalises `mansign verify --output json` (docs/cli.md) into one row per document, for
# scripts/action-verify.sh. Both shapes of an entry of `documents[]` are read: without a
# policy (one verdict per document) and with one (one verdict per object, with `rules[]`).
# (`objects[]` is what mansign before issue 15 printed with a policy.)
#
# Row: {source, document, object, verified, signers: [text], identities: [subject], reason}

def object_text:
  (.kind // "?")
  + (if (.group // "") != "" then "." + .group else "" end)
  + " "
  + (if (.namespace // "") != "" then .namespace + "/" else "" end)
  + (.name // "?");

def signer_text:
  if . == null then empty
  elif .kind == "certificate" then "\(.subject) (issuer \(.issuer))"
  elif .kind == "key" then "key \(.name // "") (sha256:\((.fingerprint // "")[0:16]))"
  elif .kind == "signing-certificate" then "certificate \(.subject) (sha256:\((.fingerprint // "")[0:16]))"
  else tostring
  end;

def failure_text: "\(.check): \(.reason)";

def rows:
  (.documents // .objects)[]
  | if has("rules") then
    {
        source, document,
        object: (.object | object_text),
        verified,
        signers: ([.rules[]? | select(.verified) | .signer | signer_text] | unique),
        identities: ([.rules[]? | select(.verified) | .signer | select(.kind == "certificate") | .subject] | unique),
        reason: (
          if .verified then ""
          elif .failure then (.failure | failure_text)
          else ([.rules[]? | select(.verified | not) | "policy \(.policy) rule \(.rule): \(.failure | failure_text)"] | join("; "))
          end)
      }
  else
    {
        source, document,
        object: (.object | object_text),
        verified,
        signers: (if .verified then [.signer | signer_text] else [] end),
        identities: (if .verified and .signer.kind == "certificate" then [.signer.subject] else [] end),
        reason: (if .verified then "" else (.failure | failure_text) end)
      }
  end;
