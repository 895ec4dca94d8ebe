//! Running a set of cases on one or more graphs, a few at a time, and scoring each.

use crate::cases::Case;
use crate::instance::{self, InstanceCase, InstanceScore};
use crate::n8n_check::check_in_n8n;
use crate::row::{answer, workflow_of, Row, Scores};
use crate::run::{run_case, BuilderGraph, CaseRun, Limits};
use crate::score::score_workflow;
use agentgraph_n8n::client::N8nClient;
use agentgraph_std_tools::catalogue::Catalogue;
use futures::StreamExt;
use std::sync::Arc;

/// Called with (case id, graph label, tool progress title) while cases run.
pub type Verbose = Arc<dyn Fn(&str, &str, &str) + Send + Sync>;

/// How to run an evaluation.
#[derive(Clone)]
pub struct EvalOptions {
    /// The set name rows carry.
    pub set: String,
    /// The model name rows carry ([`model_label`]).
    pub model: String,
    /// Cases running at once (at least 1).
    pub concurrency: usize,
    /// Time and token budgets of each case.
    pub limits: Limits,
    /// The n8n instance asked whether it accepts (and runs) each workflow, if any.
    pub n8n: Option<N8nClient>,
    /// Tool progress while cases run, if wanted.
    pub verbose: Option<Verbose>,
}

/// Runs every case on every graph (case by case, each graph in turn), scoring the workflows
/// over `catalogue`; `on_row` gets each row as soon as it is scored (in completion order).
/// Returns the rows in case, then graph, order.
pub async fn evaluate(
    cases: &[Case],
    graphs: &[BuilderGraph],
    catalogue: Arc<Catalogue>,
    opts: &EvalOptions,
    on_row: impl FnMut(&Row),
) -> Vec<Row> {
    let pairs: Vec<(&Case, &BuilderGraph)> = cases
        .iter()
        .flat_map(|case| graphs.iter().map(move |graph| (case, graph)))
        .collect();
    evaluate_pairs(&pairs, catalogue, opts, on_row).await
}

/// Runs each (case, graph) pair, as [`evaluate`] does for all of them (an interrupted
/// evaluation is continued by running the pairs its results file lacks). Returns the rows in
/// the order of `pairs`.
pub async fn evaluate_pairs(
    pairs: &[(&Case, &BuilderGraph)],
    catalogue: Arc<Catalogue>,
    opts: &EvalOptions,
    mut on_row: impl FnMut(&Row),
) -> Vec<Row> {
    let jobs = pairs.iter().copied().enumerate().map(|(i, (case, graph))| {
        let catalogue = catalogue.clone();
        async move { (i, run_and_score(case, graph, &catalogue, opts).await) }
    });
    let mut done = futures::stream::iter(jobs).buffer_unordered(opts.concurrency.max(1));
    let mut rows = Vec::new();
    while let Some((i, row)) = done.next().await {
        on_row(&row);
        rows.push((i, row));
    }
    rows.sort_by_key(|(i, _)| *i);
    rows.into_iter().map(|(_, r)| r).collect()
}

/// Runs one case on one graph and scores it.
pub async fn run_and_score(
    case: &Case,
    graph: &BuilderGraph,
    catalogue: &Catalogue,
    opts: &EvalOptions,
) -> Row {
    let show = opts.verbose.clone().map(|v| {
        let (id, label) = (case.id.clone(), graph.label.clone());
        move |title: &str| v(&id, &label, title)
    });
    let progress = show.as_ref().map(|f| f as &(dyn Fn(&str) + Send + Sync));
    if let Some(instance) = &case.instance {
        return run_instance_case(case, instance, graph, catalogue, opts, progress).await;
    }
    let run = run_case(graph, case, &opts.limits, progress).await;
    let workflow = workflow_of(&run.values);
    let mut scores = Scores {
        workflow: score_workflow(&workflow, &case.checklist, catalogue),
        n8n: None,
        instance: None,
    };
    if let Some(client) = &opts.n8n {
        scores.n8n = Some(check_in_n8n(client, &workflow, case.offline.as_ref()).await);
    }
    Row::new(&case.id, &opts.set, &graph.label, &opts.model, &run, scores)
}

/// An instance case: its workflows set up in n8n, the run with its questions answered, the
/// answer and the instance checked, the case's workflows removed again. Without n8n, or when
/// the setup fails, the row says so and nothing runs.
async fn run_instance_case(
    case: &Case,
    instance: &InstanceCase,
    graph: &BuilderGraph,
    catalogue: &Catalogue,
    opts: &EvalOptions,
    progress: Option<crate::run::Progress<'_>>,
) -> Row {
    let not_run = |why: String| {
        let run = CaseRun::not_run(why.clone());
        let scores = Scores {
            workflow: score_workflow(&workflow_of(&run.values), &case.checklist, catalogue),
            n8n: None,
            instance: Some(InstanceScore::failed_setup(instance, why)),
        };
        Row::new(&case.id, &opts.set, &graph.label, &opts.model, &run, scores)
    };
    let Some(client) = &opts.n8n else {
        return not_run("an instance case needs n8n: set N8N_API_URL and N8N_API_KEY".into());
    };
    if let Err(why) = instance::set_up(client, instance).await {
        return not_run(why);
    }
    let run = run_case(graph, case, &opts.limits, progress).await;
    let said = answer(&run.values);
    let mut checked =
        instance::score(client, instance, &said, &run.meter, run.answered.clone()).await;
    if let Err(why) = instance::clear(client, instance).await {
        checked.error.get_or_insert(why);
    }
    let scores = Scores {
        workflow: score_workflow(&workflow_of(&run.values), &case.checklist, catalogue),
        n8n: None,
        instance: Some(checked),
    };
    Row::new(&case.id, &opts.set, &graph.label, &opts.model, &run, scores)
}

/// The model the environment configures for the builder graphs' `auto` model blocks:
/// `openai/<OPENAI_MODEL> at <OPENAI_BASE_URL>`, `anthropic/<ANTHROPIC_MODEL>`, `scripted`
/// (with its script folder), or why none is.
pub fn model_label() -> String {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let default = || "(the graph's default)".to_string();
    match agentgraph_dsl::agents::auto_provider(env) {
        Ok("openai") => {
            let at = env("OPENAI_BASE_URL")
                .map(|u| format!(" at {u}"))
                .unwrap_or_default();
            format!("openai/{}{at}", env("OPENAI_MODEL").unwrap_or_else(default))
        }
        Ok("anthropic") => format!(
            "anthropic/{}",
            env("ANTHROPIC_MODEL").unwrap_or_else(default)
        ),
        Ok(p) => match env("AGENTGRAPH_SCRIPT_DIR") {
            Some(dir) => format!("{p} ({dir})"),
            None => p.to_string(),
        },
        Err(_) => "no model configured".into(),
    }
}
