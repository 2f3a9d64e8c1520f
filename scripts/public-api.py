#!/usr/bin/env python3
"""public-api.py RUSTDOC_JSON: the library's public API as sorted text, one item per line.

Reads the rustdoc JSON of the `mansign` library (scripts/public-api.sh makes it) and prints
every public item reachable from the crate root: modules, re-exports, structs with their
public fields, enums with their variants, functions and methods with their signatures,
constants, traits and the trait impls of public types (auto traits and blanket impls left
out: they follow from the fields). `#[non_exhaustive]` is printed, since adding or removing it
changes what callers may write. The output is the committed snapshot `public-api.txt`;
scripts/public-api.sh compares the two, so every change to the API is a deliberate diff.
"""

import json
import sys


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    api = Api(doc)
    api.module(str(doc["root"]), "mansign")
    for line in sorted(set(api.lines)):
        print(line)


class Api:
    def __init__(self, doc):
        self.index = doc["index"]
        self.lines = []
        self.visited = set()

    def item(self, item_id):
        return self.index.get(str(item_id))

    def emit(self, line):
        self.lines.append(line)

    def module(self, item_id, path):
        if item_id in self.visited:
            return
        self.visited.add(item_id)
        module = self.item(item_id)
        for child_id in module["inner"]["module"]["items"]:
            child = self.item(child_id)
            if child is None or child["visibility"] != "public":
                continue
            self.public_item(str(child_id), child, path)

    def public_item(self, item_id, item, path):
        kind, inner = next(iter(item["inner"].items()))
        name = item["name"]
        here = f"{path}::{name}" if name else path
        deprecated = " #[deprecated]" if item.get("deprecation") else ""
        if kind == "module":
            self.emit(f"pub mod {here}{deprecated}")
            self.module(item_id, here)
        elif kind == "use":
            glob = "::*" if inner["is_glob"] else ""
            self.emit(f"pub use {path}::{inner['name']}{glob} = {inner['source']}{glob}")
            # An item of this crate re-exported from a private module: its shape is API too,
            # printed under the path callers name it by.
            target_id = inner.get("id")
            target = self.item(target_id) if target_id is not None else None
            if target is not None and target["crate_id"] == 0:
                if inner["is_glob"]:
                    self.module(str(target_id), path)
                elif ("use", target_id) not in self.visited:
                    self.visited.add(("use", target_id))
                    renamed = dict(target, name=inner["name"])
                    self.public_item(str(target_id), renamed, path)
        elif kind == "struct":
            self.struct(item, inner, here)
        elif kind == "enum":
            self.enum(item, inner, here)
        elif kind == "function":
            self.emit(self.function(inner, here) + deprecated)
        elif kind == "constant":
            self.emit(f"pub const {here}: {ty(inner['type'])}")
        elif kind == "static":
            self.emit(f"pub static {here}: {ty(inner['type'])}")
        elif kind == "type_alias":
            self.emit(f"pub type {here}{generics(inner['generics'])} = {ty(inner['type'])}")
        elif kind == "trait":
            self.emit(f"pub trait {here}{generics(inner['generics'])}")
            for member_id in inner["items"]:
                member = self.item(member_id)
                self.assoc(member, here)
        elif kind == "macro":
            self.emit(f"pub macro {here}!")
        else:
            self.emit(f"pub {kind} {here}")

    def attrs(self, item):
        text = " ".join(str(a) for a in item.get("attrs", []))
        return "#[non_exhaustive] " if "non_exhaustive" in text else ""

    def struct(self, item, inner, here):
        kind = inner["kind"]
        self.emit(f"{self.attrs(item)}pub struct {here}{generics(inner['generics'])}")
        if isinstance(kind, dict) and "plain" in kind:
            for field_id in kind["plain"]["fields"]:
                field = self.item(field_id)
                if field and field["visibility"] == "public":
                    self.emit(f"pub {here}.{field['name']}: {ty(field['inner']['struct_field'])}")
        elif isinstance(kind, dict) and "tuple" in kind:
            for n, field_id in enumerate(kind["tuple"]):
                field = self.item(field_id) if field_id is not None else None
                if field and field["visibility"] == "public":
                    self.emit(f"pub {here}.{n}: {ty(field['inner']['struct_field'])}")
        self.impls(inner["impls"], here)

    def enum(self, item, inner, here):
        self.emit(f"{self.attrs(item)}pub enum {here}{generics(inner['generics'])}")
        for variant_id in inner["variants"]:
            variant = self.item(variant_id)
            kind = variant["inner"]["variant"]["kind"]
            name = f"{here}::{variant['name']}"
            if kind == "plain":
                self.emit(f"{self.attrs(variant)}{name}")
            elif "tuple" in kind:
                fields = [self.item(f) for f in kind["tuple"] if f is not None]
                types = ", ".join(ty(f["inner"]["struct_field"]) for f in fields)
                self.emit(f"{self.attrs(variant)}{name}({types})")
            elif "struct" in kind:
                fields = [self.item(f) for f in kind["struct"]["fields"]]
                members = ", ".join(
                    f"{f['name']}: {ty(f['inner']['struct_field'])}" for f in fields
                )
                self.emit(f"{self.attrs(variant)}{name} {{ {members} }}")
        self.impls(inner["impls"], here)

    def impls(self, impl_ids, here):
        for impl_id in impl_ids:
            impl_item = self.item(impl_id)
            if impl_item is None:
                continue
            impl = impl_item["inner"]["impl"]
            if impl["is_synthetic"] or impl["blanket_impl"] is not None:
                continue
            trait = impl["trait"]
            if trait is None:
                for member_id in impl["items"]:
                    member = self.item(member_id)
                    if member and member["visibility"] == "public":
                        self.assoc(member, here)
            else:
                negative = "!" if impl["is_negative"] else ""
                self.emit(
                    f"impl{generics(impl['generics'])} {negative}{path_of(trait)} "
                    f"for {here}"
                )

    def assoc(self, member, owner):
        if member is None:
            return
        kind, inner = next(iter(member["inner"].items()))
        here = f"{owner}::{member['name']}"
        if kind == "function":
            self.emit(self.function(inner, here))
        elif kind == "assoc_const":
            self.emit(f"pub const {here}: {ty(inner['type'])}")
        elif kind == "assoc_type":
            self.emit(f"type {here}")

    def function(self, inner, here):
        header = inner["header"]
        prefix = "".join(
            word
            for flag, word in (
                ("is_const", "const "),
                ("is_async", "async "),
                ("is_unsafe", "unsafe "),
            )
            if header[flag]
        )
        sig = inner["sig"]
        args = ", ".join(arg(name, t) for name, t in sig["inputs"])
        output = f" -> {ty(sig['output'])}" if sig["output"] is not None else ""
        return f"pub {prefix}fn {here}{generics(inner['generics'])}({args}){output}"


def arg(name, t):
    if name == "self":
        return ty(t).replace("Self", "self", 1) if t != {"generic": "Self"} else "self"
    return f"{name}: {ty(t)}"


def path_of(p):
    return p["path"] + generic_args(p.get("args"))


def generic_args(args):
    if not args:
        return ""
    if "angle_bracketed" in args:
        ab = args["angle_bracketed"]
        parts = []
        for a in ab["args"]:
            if "type" in a:
                parts.append(ty(a["type"]))
            elif "lifetime" in a:
                parts.append(a["lifetime"])
            elif "const" in a:
                parts.append(a["const"].get("expr", "_"))
            else:
                parts.append("_")
        for c in ab.get("constraints", []):
            binding = c.get("binding", {})
            if "equality" in binding and "type" in binding["equality"]:
                parts.append(f"{c['name']} = {ty(binding['equality']['type'])}")
            else:
                parts.append(c["name"])
        return "<" + ", ".join(parts) + ">" if parts else ""
    if "parenthesized" in args:
        p = args["parenthesized"]
        out = f" -> {ty(p['output'])}" if p.get("output") else ""
        return "(" + ", ".join(ty(t) for t in p["inputs"]) + ")" + out
    return ""


def bound(b):
    if "trait_bound" in b:
        return path_of(b["trait_bound"]["trait"])
    if "outlives" in b:
        return b["outlives"]
    return "?"


def generics(g):
    params = []
    for p in g.get("params", []):
        kind = p["kind"]
        if "lifetime" in kind:
            params.append(p["name"])
        elif "type" in kind:
            if kind["type"].get("is_synthetic"):
                continue
            bounds = " + ".join(bound(b) for b in kind["type"]["bounds"])
            params.append(p["name"] + (f": {bounds}" if bounds else ""))
        elif "const" in kind:
            params.append(f"const {p['name']}: {ty(kind['const']['type'])}")
    return "<" + ", ".join(params) + ">" if params else ""


def ty(t):
    if t is None:
        return "()"
    if isinstance(t, str):
        return t
    (kind, v), = t.items()
    if kind == "resolved_path":
        return path_of(v)
    if kind == "primitive":
        return v
    if kind == "generic":
        return v
    if kind == "borrowed_ref":
        life = f"{v['lifetime']} " if v.get("lifetime") else ""
        mut = "mut " if v["is_mutable"] else ""
        return f"&{life}{mut}{ty(v['type'])}"
    if kind == "raw_pointer":
        return f"*{'mut' if v['is_mutable'] else 'const'} {ty(v['type'])}"
    if kind == "tuple":
        return "(" + ", ".join(ty(x) for x in v) + ")"
    if kind == "slice":
        return f"[{ty(v)}]"
    if kind == "array":
        return f"[{ty(v['type'])}; {v['len']}]"
    if kind == "impl_trait":
        return "impl " + " + ".join(bound(b) for b in v)
    if kind == "dyn_trait":
        traits = " + ".join(path_of(x["trait"]) for x in v["traits"])
        life = f" + {v['lifetime']}" if v.get("lifetime") else ""
        return f"dyn {traits}{life}"
    if kind == "qualified_path":
        trait = path_of(v["trait"]) if v.get("trait") else "_"
        return f"<{ty(v['self_type'])} as {trait}>::{v['name']}"
    if kind == "function_pointer":
        sig = v["sig"]
        out = f" -> {ty(sig['output'])}" if sig["output"] is not None else ""
        return "fn(" + ", ".join(ty(x) for _, x in sig["inputs"]) + ")" + out
    if kind == "infer":
        return "_"
    return json.dumps(t, sort_keys=True)


if __name__ == "__main__":
    main()
