//! The pipeline over a loaded project: every file's graphs are checked once, and the compiler
//! reuses the symbols of that pass for the root graph and its subgraphs.

use super::{in_file, key, prompt_file, read_disk, Project, Reader, Source};
use crate::ast::*;
use crate::check::{check_graph, Symbols};
use crate::compile::{compile_graph, Compiled, SubgraphResolver};
use crate::diagnostic::{catalogue as diag, codes, Diagnostic};
use crate::registry::{Registry, SourceFile};
use agentgraph_runtime::CompiledGraph;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The result of the check pass: every diagnostic, and the symbols of each file's first graph.
struct Checked<'p> {
    diagnostics: Vec<Diagnostic>,
    symbols: HashMap<PathBuf, Symbols<'p>>,
}

impl Project {
    /// Every diagnostic of every file: parse errors, then static checks.
    pub fn check(&self, reg: &Registry) -> Vec<Diagnostic> {
        self.check_pass(reg).diagnostics
    }

    /// Checks every file once and, when nothing is an error, compiles the root file's first
    /// graph with the symbols of that check. `Err` holds every diagnostic (errors and warnings).
    pub fn check_and_compile(&self, reg: &Registry) -> Result<Compiled, Vec<Diagnostic>> {
        let checked = self.check_pass(reg);
        if checked.diagnostics.iter().any(Diagnostic::is_error) {
            return Err(checked.diagnostics);
        }
        let resolver = Resolver {
            project: self,
            reg,
            symbols: &checked.symbols,
            cache: RefCell::new(HashMap::new()),
        };
        let graph = resolver.compile_file(&self.root)?;
        Ok(Compiled {
            graph,
            warnings: checked.diagnostics,
        })
    }

    /// [`Project::check_and_compile`] without the warnings.
    pub fn compile(&self, reg: &Registry) -> Result<CompiledGraph, Vec<Diagnostic>> {
        self.check_and_compile(reg).map(|c| c.graph)
    }

    fn check_pass(&self, reg: &Registry) -> Checked<'_> {
        let mut out = self.diagnostics.clone();
        let mut symbols = HashMap::new();
        for (path, src) in &self.sources {
            let Some(ast) = &src.ast else { continue };
            let had_errors = out.iter().any(|d| d.file == src.name);
            let mut ds = file_level(ast, had_errors);
            for (i, g) in ast.graphs.iter().enumerate() {
                let s = check_graph(g, &ast.uses, reg, &mut ds);
                self.check_prompt_files(g, src, &mut ds);
                if i == 0 {
                    symbols.insert(path.clone(), s);
                }
            }
            // Reachability warnings after an error are mostly echoes of it (a line lost to a
            // syntax error, an edge to a misspelt node): report them once the errors are fixed.
            // So is "no entry point" when a broken line held the `START ->` edge.
            let has_errors = ds
                .iter()
                .chain(out.iter().filter(|d| d.file == src.name))
                .any(|d| d.is_error() && !d.is(codes::GRAPH_REJECTED));
            let echo = |d: &Diagnostic| {
                d.is(codes::UNREACHABLE) || d.is(codes::DEAD_END) || d.is(codes::GRAPH_REJECTED)
            };
            out.extend(
                ds.into_iter()
                    .filter(|d| !(has_errors && echo(d)))
                    .map(|d| in_file(d, &src.name)),
            );
        }
        Checked {
            diagnostics: out,
            symbols,
        }
    }

    fn check_prompt_files(&self, g: &GraphDecl, src: &Source, out: &mut Vec<Diagnostic>) {
        let dir = src.path.parent().map(Path::to_path_buf).unwrap_or_default();
        for item in &g.items {
            let GraphItem::Prompt(p) = item else { continue };
            if let Some(lit) = prompt_file(p) {
                let k = key(&dir.join(&lit.value));
                if let Some(why) = self.prompt_errors.get(&k) {
                    out.push(diag::unreadable_prompt_file(lit.span, &lit.value, why));
                } else if !self.prompt_texts.contains_key(&k) {
                    out.push(diag::missing_prompt_file(lit.span, &lit.value, &dir));
                }
            }
        }
    }
}

/// Findings about a file as a whole: no graph (unless it already has errors), a second graph.
fn file_level(ast: &File, had_errors: bool) -> Vec<Diagnostic> {
    let mut ds = Vec::new();
    if ast.graphs.is_empty() && !had_errors {
        ds.push(diag::no_graph());
    }
    for g in ast.graphs.iter().skip(1) {
        ds.push(diag::second_graph(g.name.span, &g.name.name));
    }
    ds
}

/// Compiles files of a checked project, each once.
struct Resolver<'a> {
    project: &'a Project,
    reg: &'a Registry,
    symbols: &'a HashMap<PathBuf, Symbols<'a>>,
    cache: RefCell<HashMap<PathBuf, CompiledGraph>>,
}

impl Resolver<'_> {
    fn compile_file(&self, path: &Path) -> Result<CompiledGraph, Vec<Diagnostic>> {
        if let Some(g) = self.cache.borrow().get(path) {
            return Ok(g.clone());
        }
        let src = self
            .project
            .sources
            .get(path)
            .ok_or_else(|| vec![diag::not_loaded(path)])?;
        let ast = src.ast.as_ref().ok_or_else(Vec::new)?;
        let g = ast
            .graphs
            .first()
            .ok_or_else(|| vec![diag::file_without_graph(&src.name)])?;
        let symbols = self
            .symbols
            .get(path)
            .ok_or_else(|| vec![diag::not_loaded(path)])?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let prompts = prompts_from(g, &dir, &|p: &Path| {
            self.project
                .prompt_texts
                .get(&key(p))
                .cloned()
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        });
        let source = SourceFile {
            name: &src.name,
            text: &src.text,
        };
        let compiled =
            compile_graph(g, symbols, self.reg, &dir, &prompts, source, self).map_err(|ds| {
                ds.into_iter()
                    .map(|d| in_file(d, &src.name))
                    .collect::<Vec<_>>()
            })?;
        self.cache
            .borrow_mut()
            .insert(path.to_path_buf(), compiled.clone());
        Ok(compiled)
    }

    fn alias_path(&self, alias: &str, base_dir: &Path) -> Option<PathBuf> {
        for src in self.project.sources.values() {
            if src.path.parent() != Some(base_dir) {
                continue;
            }
            if let Some(u) = src
                .ast
                .as_ref()
                .and_then(|a| a.uses.iter().find(|u| u.alias.name == alias))
            {
                return Some(key(&base_dir.join(&u.path.value)));
            }
        }
        None
    }
}

impl SubgraphResolver for Resolver<'_> {
    fn resolve(&self, r: &SubgraphRef, base_dir: &Path) -> Result<CompiledGraph, Diagnostic> {
        let (path, span) = match r {
            SubgraphRef::Path(p) => (key(&base_dir.join(&p.value)), p.span),
            SubgraphRef::Alias(a) => match self.alias_path(&a.name, base_dir) {
                Some(p) => (p, a.span),
                None => return Err(diag::not_imported(a.span, &a.name)),
            },
        };
        self.compile_file(&path).map_err(|ds| {
            ds.into_iter()
                .next()
                .unwrap_or_else(|| diag::subgraph_does_not_compile(span))
        })
    }
}

/// Prompt texts by name: strings as written, `file(…)` read from disk.
pub fn prompts(g: &GraphDecl, dir: &Path) -> BTreeMap<String, String> {
    prompts_from(g, dir, &read_disk)
}

fn prompts_from(g: &GraphDecl, dir: &Path, read: Reader<'_>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for item in &g.items {
        let GraphItem::Prompt(p) = item else { continue };
        let text = match (&p.value.kind, prompt_file(p)) {
            (ExprKind::Str { lit }, _) => lit.value.clone(),
            (_, Some(lit)) => read(&dir.join(&lit.value)).unwrap_or_default(),
            _ => String::new(),
        };
        out.insert(p.name.name.clone(), text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::tests::checks;

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<PathBuf, String> {
        pairs
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect()
    }

    #[test]
    fn check_and_compile_checks_each_graph_once() {
        let root = PathBuf::from("/p/root.ag");
        let project = Project::from_files(
            &root,
            &files(&[
                (
                    "/p/root.ag",
                    "graph root {\n  state { n: int = 0 }\n  node child: subgraph \"child.ag\"\n  node lost { set { n: 1 } }\n  START -> child -> END\n}\n",
                ),
                (
                    "/p/child.ag",
                    "graph child {\n  state { n: int = 0 }\n  node bump { set { n: n + 1 } }\n  START -> bump -> END\n}\n",
                ),
            ]),
        )
        .expect("the snapshot has its root");
        let before = checks();
        let compiled = project
            .check_and_compile(&Registry::default())
            .unwrap_or_else(|ds| panic!("compiles: {ds:?}"));
        assert_eq!(checks() - before, 2, "one check per graph");
        let codes: Vec<&str> = compiled.warnings.iter().map(|d| d.code).collect();
        assert_eq!(
            codes,
            [codes::UNREACHABLE.id],
            "the warning comes with the graph"
        );
    }

    #[test]
    fn errors_stop_before_compiling() {
        let root = PathBuf::from("/p/bad.ag");
        let project = Project::from_files(
            &root,
            &files(&[("/p/bad.ag", "graph bad {\n  START -> nowhere -> END\n}\n")]),
        )
        .expect("the snapshot has its root");
        let before = checks();
        let Err(ds) = project.check_and_compile(&Registry::default()) else {
            panic!("an unknown node does not compile");
        };
        assert_eq!(checks() - before, 1);
        assert!(ds.iter().any(|d| d.is(codes::UNKNOWN_NODE)), "{ds:?}");
    }
}
