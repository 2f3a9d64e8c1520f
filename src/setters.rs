//! `setters!`: the builder-style setters of a `#[non_exhaustive]` options struct, one per
//! field (`with_FIELD(mut self, value) -> Self`), each with its own documentation. Callers
//! outside the crate cannot write such a struct as a literal; they start from `Default` and
//! these.

/// `setters! { #[doc] Type { #[doc] with_field => field: Type, ... } }` writes
/// `impl Type { pub fn with_field(mut self, value: Type) -> Self { self.field = value; self } ... }`,
/// each setter with the attributes (its rustdoc) written before it.
macro_rules! setters {
    (
        $(#[$impl_attr:meta])*
        $ty:ty {
            $(
                $(#[$attr:meta])*
                $setter:ident => $field:ident : $value:ty
            ),* $(,)?
        }
    ) => {
        $(#[$impl_attr])*
        impl $ty {
            $(
                $(#[$attr])*
                pub fn $setter(mut self, value: $value) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

pub(crate) use setters;
