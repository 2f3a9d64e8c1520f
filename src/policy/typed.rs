//! Typed policy documents from the JSON values the manifest reader returns, with the field
//! path in errors (`spec.rules[0].validate.manifests.dryrun: unknown field ...`), as a policy
//! author needs it. `serde_json::from_value` alone names no path.

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde_json::Value;
use std::cell::RefCell;
use std::fmt::Write as _;

type Error = serde_json::Error;

/// One step of the path to an error, recorded innermost first while the error unwinds.
enum Step {
    Key(String),
    Index(usize),
}

/// Deserializes `value` as `T`; the error message starts with the path of the failing field.
pub(crate) fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    let path = RefCell::new(Vec::new());
    T::deserialize(At { value, path: &path }).map_err(|e| {
        let mut rendered = String::new();
        for step in path.borrow().iter().rev() {
            match step {
                Step::Index(i) => {
                    let _ = write!(rendered, "[{i}]");
                }
                Step::Key(k) => {
                    if !rendered.is_empty() {
                        rendered.push('.');
                    }
                    rendered.push_str(k);
                }
            }
        }
        if rendered.is_empty() {
            e.to_string()
        } else {
            format!("{rendered}: {e}")
        }
    })
}

#[derive(Clone, Copy)]
struct At<'a> {
    value: &'a Value,
    path: &'a RefCell<Vec<Step>>,
}

impl<'a> At<'a> {
    fn note(&self, step: Step) {
        self.path.borrow_mut().push(step);
    }

    /// Deserializes `value`, a child of this value, with `seed`; on an error, `step` (where
    /// the child is) is noted on the path.
    fn child<'de, S: DeserializeSeed<'de>>(
        &self,
        value: &'a Value,
        seed: S,
        step: impl FnOnce() -> Step,
    ) -> Result<S::Value, Error> {
        let child = At {
            value,
            path: self.path,
        };
        seed.deserialize(child).inspect_err(|_| self.note(step()))
    }
}

impl<'de> de::Deserializer<'de> for At<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_str(s),
            Value::Array(items) => visitor.visit_seq(Seq {
                items: items.iter().enumerate(),
                at: self,
            }),
            Value::Object(map) => visitor.visit_map(Map {
                entries: map.iter(),
                pending: None,
                at: self,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            Value::Object(map) if map.len() == 1 => match map.iter().next() {
                Some((variant, value)) => visitor.visit_enum(Enum {
                    variant,
                    value: At {
                        value,
                        path: self.path,
                    },
                }),
                None => self.deserialize_any(visitor),
            },
            _ => self.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

struct Seq<'a> {
    /// The items with their indexes.
    items: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
    at: At<'a>,
}

impl<'de> SeqAccess<'de> for Seq<'_> {
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        self.items
            .next()
            .map(|(index, value)| self.at.child(value, seed, || Step::Index(index)))
            .transpose()
    }
}

struct Map<'a> {
    entries: serde_json::map::Iter<'a>,
    pending: Option<(&'a String, &'a Value)>,
    at: At<'a>,
}

impl<'de> MapAccess<'de> for Map<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.pending = Some((key, value));
        let deserializer: de::value::StrDeserializer<'_, Error> = key.as_str().into_deserializer();
        seed.deserialize(deserializer).map(Some).inspect_err(|_| {
            self.at.note(Step::Key(key.clone()));
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let Some((key, value)) = self.pending.take() else {
            return Err(de::Error::custom("a value without its key"));
        };
        self.at.child(value, seed, || Step::Key(key.clone()))
    }
}

struct Enum<'a> {
    variant: &'a String,
    value: At<'a>,
}

impl<'de, 'a> EnumAccess<'de> for Enum<'a> {
    type Error = Error;
    type Variant = Enum<'a>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Enum<'a>), Error> {
        let deserializer: de::value::StrDeserializer<'_, Error> =
            self.variant.as_str().into_deserializer();
        let variant = seed.deserialize(deserializer)?;
        Ok((variant, self))
    }
}

impl Enum<'_> {
    fn noted<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        result.inspect_err(|_| {
            self.value.note(Step::Key(self.variant.clone()));
        })
    }
}

impl<'de> VariantAccess<'de> for Enum<'_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        self.noted(de::Deserialize::deserialize(self.value))
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, Error> {
        self.noted(seed.deserialize(self.value))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.noted(de::Deserializer::deserialize_seq(self.value, visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.noted(de::Deserializer::deserialize_map(self.value, visitor))
    }
}
