//! Template filters and expression functions the embedding application adds to the built-in
//! ones ([`crate::template::BUILTIN_FILTERS`], [`crate::functions::FUNCTIONS`]). Register them
//! with [`crate::Registry::register_filter`] and [`crate::Registry::register_function`]; the
//! checker knows their names, arities and result types, and compiled graphs call them.
//!
//! A built-in of the same name wins: applications add names, they do not redefine the language.

use crate::types::Ty;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// What a filter or function does at run time: the result, or why there is none.
pub type FilterFn = dyn Fn(&Value) -> Result<Value, String> + Send + Sync;

/// A function's body: the arguments (already counted against its arity) to the result.
pub type FunctionFn = dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync;

/// A registered template filter: `{{ value | name }}`.
#[derive(Clone)]
pub struct Filter {
    /// One line for `did you mean` lists and docs.
    pub doc: String,
    /// Applies it.
    pub apply: Arc<FilterFn>,
}

/// A registered expression function: `name(args…)`.
#[derive(Clone)]
pub struct Function {
    /// Fewest arguments.
    pub min: usize,
    /// Most arguments.
    pub max: usize,
    /// The type of its result, for checks ([`Ty::Any`] when it depends).
    pub returns: Ty,
    /// One line for error hints and docs.
    pub doc: String,
    /// Calls it.
    pub call: Arc<FunctionFn>,
}

/// What the checker needs of a function, built-in or registered.
pub struct Signature {
    /// Fewest arguments.
    pub min: usize,
    /// Most arguments.
    pub max: usize,
    /// What it does.
    pub doc: String,
    returns: Returns,
}

enum Returns {
    Builtin(fn(&[Ty]) -> Ty),
    Fixed(Ty),
}

impl Signature {
    /// The result type for arguments of types `args`.
    pub fn result(&self, args: &[Ty]) -> Ty {
        match &self.returns {
            Returns::Builtin(f) => f(args),
            Returns::Fixed(t) => t.clone(),
        }
    }
}

/// The filters and functions an application registered.
#[derive(Clone, Default)]
pub struct Extensions {
    filters: BTreeMap<String, Filter>,
    functions: BTreeMap<String, Function>,
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("filters", &self.filters.keys().collect::<Vec<_>>())
            .field("functions", &self.functions.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Extensions {
    /// Adds (or replaces) a filter.
    pub fn add_filter(&mut self, name: impl Into<String>, filter: Filter) {
        self.filters.insert(name.into(), filter);
    }

    /// Adds (or replaces) a function.
    pub fn add_function(&mut self, name: impl Into<String>, function: Function) {
        self.functions.insert(name.into(), function);
    }

    /// Whether `name` is a built-in or registered filter.
    pub fn has_filter(&self, name: &str) -> bool {
        crate::template::BUILTIN_FILTERS.contains(&name) || self.filters.contains_key(name)
    }

    /// Every filter name: the built-ins, then the registered ones.
    pub fn filter_names(&self) -> Vec<&str> {
        let mut out = crate::template::BUILTIN_FILTERS.to_vec();
        out.extend(
            self.filters
                .keys()
                .map(String::as_str)
                .filter(|n| !crate::template::BUILTIN_FILTERS.contains(n)),
        );
        out
    }

    /// The registered filter `name` (not the built-ins).
    pub fn filter(&self, name: &str) -> Option<&Filter> {
        self.filters.get(name)
    }

    /// The registered function `name` (not the built-ins).
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.get(name)
    }

    /// The signature of the built-in or registered function `name`.
    pub fn signature(&self, name: &str) -> Option<Signature> {
        if let Some(s) = crate::functions::spec(name) {
            return Some(Signature {
                min: s.min,
                max: s.max,
                doc: s.doc.to_string(),
                returns: Returns::Builtin(s.returns),
            });
        }
        self.functions.get(name).map(|f| Signature {
            min: f.min,
            max: f.max,
            doc: f.doc.clone(),
            returns: Returns::Fixed(f.returns.clone()),
        })
    }

    /// Every function name: the built-ins, then the registered ones.
    pub fn function_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = crate::functions::FUNCTIONS.iter().map(|f| f.name).collect();
        out.extend(
            self.functions
                .keys()
                .map(String::as_str)
                .filter(|n| crate::functions::spec(n).is_none()),
        );
        out
    }
}
