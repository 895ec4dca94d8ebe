//! The agentgraph HTTP/SSE server: start runs on threads, stream their events with replay
//! from `Last-Event-ID`, answer interrupts, cancel, and read state and history.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentgraph_server::ServerError> {
//! use agentgraph_server::{serve, ServerConfig};
//! let config = ServerConfig::new("graphs", "./.agentgraph");
//! serve(config, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
//!
//! The server knows no particular application: [`ServerConfig::registry`] says which tools
//! and kinds graphs may use, [`ServerConfig::pages`] adds pages (such as a chat page; [`ServerConfig::studio`] the studio at `/`),
//! [`ServerConfig::routes`] adds endpoints (such as deploying a thread's result somewhere;
//! [`ServerState::thread_graph`] and [`ServerState::hold_thread`] are what they build on).
//!
//! Endpoints (JSON errors are `{"error": {"code", "message"}}`, plus `diagnostics` for 422;
//! an unknown path is 404 `NOT_FOUND`, a wrong method 405 `METHOD_NOT_ALLOWED`):
//! - `POST /threads/{id}/runs` `{graph, input?, stream_modes?, recursion_limit?, config?,
//!   durability?}` → 202 `{run_id, thread_id, graph, graph_version}` (`durability`: `sync`,
//!   `async` or `exit`, as in `docs/runtime.md`, default [`ServerConfig::durability`];
//!   `/resume` and `/fork` take it too);
//!   409 `RUN_ACTIVE`, 409 `THREAD_GRAPH_MISMATCH` (the thread holds another graph's state), 404
//!   `GRAPH_NOT_FOUND`, 400 `BAD_INPUT`/`BAD_STREAM_MODE`/`BAD_DURABILITY`/`BAD_REQUEST`/
//!   `BAD_GRAPH_NAME`, 413 `PAYLOAD_TOO_LARGE`,
//!   422 `GRAPH_INVALID`. The `run_id` is the engine's too: checkpoint metadata `run_id` and
//!   the run's key in `usage.runs`.
//! - `GET /threads/{id}/events`: SSE, each event `id: <seq>` and `data: {seq, ns, mode, node,
//!   data}`. `Last-Event-ID` (header) or `?lastEventId=` replays the logged events after that
//!   id, then goes on live; without either, only new events come (`lastEventId=0` replays the
//!   whole log). Runs are framed by `mode: "run"` events, `data: {status: "started", run_id,
//!   graph_version}`
//!   and `data: {status: done|interrupted|failed|cancelled, run_id, error?, interrupts?,
//!   next?, checkpoint_id?}`. On shutdown (SIGTERM or Ctrl-C for `agentgraph serve`) runs in
//!   flight end `cancelled`. A run the previous server process did not end (killed, crashed,
//!   or past the shutdown grace) gets `data: {status: "interrupted", run_id, reason}` when the
//!   server starts again on the same storage (`reason`, and no `interrupts`, tell it apart
//!   from an interrupt); resume the thread to continue from its last checkpoint. With
//!   [`ServerConfig::run_leases`] such a run is picked up by a server sharing the storage
//!   once its lease expires (its `started` event there has `resumed: true, attempt`), a run
//!   cancelled by a shutdown is handed over (`requeued: true` in its `cancelled` end), and a
//!   run whose lease another server took ends `interrupted` with a `reason`. When the
//!   bounded log no longer holds some of the asked-for events, an `event: gap` with
//!   `data: {from, to}` (and no id) says which.
//! - `POST /threads/{id}/resume` `{value?, values_by_id?, graph?, stream_modes?}` → 202 (as
//!   runs): answers the pending interrupt, or continues a cancelled/crashed thread; 409 while a
//!   run is active, 400 `NOTHING_TO_RESUME`, 404 `THREAD_NOT_FOUND`.
//! - `POST /threads/{id}/cancel` → 200 `{thread_id, cancelled, run_id}` (idempotent); with
//!   shared thread locks, a run on another server is asked to stop (`elsewhere: true`).
//! - `GET /threads/{id}/state[?graph=]`, `GET /threads/{id}/history?limit=N[&graph=]`,
//!   `GET /threads` → `{threads: [{thread_id, graph, active}]}`.
//! - `POST /threads/{id}/fork` `{checkpoint_id, values?, graph?, stream_modes?}` → 202 (as
//!   runs): continues the thread from an older checkpoint of its history (a branch of it).
//!   `GET /threads/{id}/state?checkpoint_id=` reads the state at such a checkpoint.
//! - `GET /studio/graphs` → `{graphs: [{name, path}]}`: every `.ag` file of the graphs folder,
//!   run or not; `GET /studio/graphs/{name}` → its diagram and channels ([`studio`]).
//! - `GET /graphs` → `{graphs: [{name, path, version, hash, status: "ok"|"error",
//!   diagnostics}]}`: the graphs compiled so far and their live-reload state; `GET
//!   /graphs/{name}` → one of them (404 `GRAPH_NOT_FOUND` if never compiled). When a file a
//!   compiled graph was built from changes (root, `use`d and subgraph files, `file(…)`
//!   prompts), it is re-checked: a clean edit gets the next `version` and serves new runs; a
//!   broken one sets `status: "error"` with the diagnostics (each with `code`, `span.line`,
//!   `span.column` and `rendered` text) and the last good version keeps serving. Runs in
//!   flight, and threads resumed after an interrupt, keep the version they started with, also
//!   across a restart on persistent storage ([`GraphVersion`]; `hash` is the serving version's
//!   id, `graph_version` of a run's `202` and `started` event the one it runs).
//!
//! Security ([`auth`]; `docs/deploy.md`): with API keys or JWT keys configured every request
//! but a page's needs `Authorization: Bearer` (401), and `/threads/{id}/…` answers 404 to all but
//! the thread's owner and `admin`; every server checks `Host` (421), wants a JSON content type
//! on state-changing requests (415) and an own or allowed `Origin` (403), and limits each
//! principal's runs and streams (429 with `Retry-After`).
//!
//! Event ids are the thread's event log's ([`EventStore::append`] assigns them, and only it):
//! they start at 1 and rise by one per thread across runs and restarts (the envelope's `seq`
//! is the id, not the runtime's per-run numbering), so they never repeat even when a cancelled
//! step's events are produced again by the resumed run.

pub mod auth;
mod backing;
mod error;
mod events;
mod extend;
mod graphs;
mod openapi;
mod pages;
mod reload;
mod routes;
mod run_lease;
mod run_pickup;
mod runs;
pub mod studio;
mod tasks;
pub mod telemetry;
mod thread_run;
mod versions;

pub use backing::{GraphStorage, CACHE_TREE, STORE_TREE};
pub use error::{ApiError, ServerError};
pub use events::{EventLimits, EventStore, Replayed, StoredEvent, LEGACY_FOLDER};
pub use extend::ThreadHold;
pub use graphs::{GraphCache, GraphLoadError, RegistryFactory, Versioned};
pub use pages::Page;
pub use reload::{
    recheck_changed, spawn_watcher, GraphHealth, GraphStatus, DEFAULT_WATCH_INTERVAL,
};
pub use routes::router;
pub use run_lease::LeaseSettings;
pub use runs::LifecycleError;
pub use thread_run::{open_run, OpenError, OpenRun, Opening};
pub use versions::GraphVersion;
/// The OpenAPI crates the server documents its routes with (see [`ServerConfig::api_routes`]).
pub use {utoipa, utoipa_axum};

use agentgraph_dsl::Registry;
use agentgraph_runtime::cache::{NodeCache, StoreCache};
use agentgraph_runtime::checkpoint::{RunLeases, SledCompression, SledOptions, ThreadLocks};
use agentgraph_runtime::store::{InMemoryStore, Store};
use agentgraph_runtime::{Checkpointer, Durability, MemoryCheckpointer, SledCheckpointer};
use auth::{AuthConfig, AuthState, KeyStore, Owners};
use runs::ActiveRun;
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Where checkpoints and events are kept.
#[derive(Clone)]
pub enum Storage {
    /// A sled folder: checkpoints in it, events in a tree of the same database behind the same
    /// write-ahead log (both survive a restart; an older server's `server-events` subfolder is
    /// moved in when found).
    Sled(PathBuf),
    /// A given checkpointer (e.g. Postgres); events in memory, or in a sled folder when
    /// `events_dir` is set.
    Checkpointer {
        /// The checkpointer every graph uses.
        checkpointer: Arc<dyn Checkpointer>,
        /// Where events are persisted; `None` keeps them in memory.
        events_dir: Option<PathBuf>,
    },
    /// Everything in memory (tests).
    Memory,
}

/// How to run the server.
#[derive(Clone)]
pub struct ServerConfig {
    /// The folder graph names are resolved in.
    pub graphs_dir: PathBuf,
    /// Checkpoints and events.
    pub storage: Storage,
    /// The address [`serve`] listens on.
    pub addr: SocketAddr,
    /// The largest request body accepted (default 1 MiB); larger ones get 413.
    pub max_body_bytes: usize,
    /// Events kept per thread for replay (default 500).
    pub events_per_thread: usize,
    /// Bytes of events kept per thread for replay (default 2 MiB).
    pub event_bytes_per_thread: usize,
    /// Builds the registry graphs are compiled against (default: [`default_registry`]).
    pub registry: RegistryFactory,
    /// Pages served next to the API (default none; `GET /` is then 404 `NOT_FOUND`).
    pub pages: Vec<Page>,
    /// How long shutdown waits for cancelled runs to write their checkpoint (default 10 s).
    pub shutdown_grace: Duration,
    /// Live reload (default on): [`serve_on`] polls the files of compiled graphs and serves
    /// clean edits to the next runs (see `GET /graphs`).
    pub watch: bool,
    /// Leases that make "one active run per thread" hold across every server sharing the
    /// storage (e.g. `PostgresCheckpointer::thread_locks`). `None` (the default): this
    /// process's own bookkeeping only, which is all a server on its own sled folder needs.
    pub thread_locks: Option<Arc<dyn ThreadLocks>>,
    /// An application's own endpoints, merged into the API (default none); not in
    /// `/openapi.json` (see [`ServerConfig::api_routes`] for documented ones).
    pub routes: Vec<axum::Router<ServerState>>,
    /// An application's own endpoints with their OpenAPI documentation, merged into the API
    /// and into `/openapi.json` (default none).
    pub api_routes: Vec<utoipa_axum::router::OpenApiRouter<ServerState>>,
    /// Runs recorded with a lease this server renews, so that another server sharing the
    /// storage continues them when this one dies, and this one continues theirs (e.g.
    /// `PostgresCheckpointer::run_leases`; see `docs/deploy.md`). `None` (the default): a
    /// run stopped by a crash waits for a resume.
    pub run_leases: Option<Arc<dyn RunLeases>>,
    /// Lease length and renewal period of [`ServerConfig::run_leases`].
    pub lease: LeaseSettings,
    /// The long-term store every graph gets (`TaskContext::store`). `None` (the default): with
    /// [`Storage::Sled`] a tree of the same database, with [`Storage::Memory`] one in memory,
    /// with [`Storage::Checkpointer`] none. When given, thread owners are kept in it too, so
    /// servers sharing it agree on them (else in the event database).
    pub store: Option<Arc<dyn Store>>,
    /// The cache of nodes with a cache policy; `None` (the default) as for [`ServerConfig::store`].
    pub node_cache: Option<Arc<dyn NodeCache>>,
    /// Authentication, `Host`/`Origin` checks and per-principal limits (see [`auth`]). The
    /// default reads API keys from [`auth::KEYS_FILE`] in the database folder.
    pub auth: AuthConfig,
    /// The durability of a run whose request names none (default [`Durability::Sync`]).
    pub durability: Durability,
}

impl ServerConfig {
    /// Defaults with graphs from `graphs_dir` and a sled store in `db`, on 127.0.0.1:8080.
    pub fn new(graphs_dir: impl Into<PathBuf>, db: impl Into<PathBuf>) -> Self {
        let db = db.into();
        ServerConfig {
            graphs_dir: graphs_dir.into(),
            auth: AuthConfig {
                keys: Some(KeyStore::in_dir(&db)),
                ..AuthConfig::default()
            },
            storage: Storage::Sled(db),
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_body_bytes: 1 << 20,
            events_per_thread: 500,
            event_bytes_per_thread: 2 << 20,
            registry: default_registry(),
            pages: Vec::new(),
            shutdown_grace: Duration::from_secs(10),
            watch: true,
            thread_locks: None,
            routes: Vec::new(),
            api_routes: Vec::new(),
            run_leases: None,
            lease: LeaseSettings::default(),
            store: None,
            node_cache: None,
            durability: Durability::Sync,
        }
    }

    /// The same configuration running with `durability` the runs that name none.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The same configuration giving every graph this long-term store.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The same configuration caching nodes' updates in `cache`.
    pub fn node_cache(mut self, cache: Arc<dyn NodeCache>) -> Self {
        self.node_cache = Some(cache);
        self
    }

    /// The same configuration with these authentication settings.
    pub fn auth(mut self, auth: AuthConfig) -> Self {
        self.auth = auth;
        self
    }

    /// The same configuration with another storage.
    pub fn storage(mut self, storage: Storage) -> Self {
        self.storage = storage;
        self
    }

    /// The same configuration listening on `addr`.
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// The same configuration with shared thread leases (see [`ServerConfig::thread_locks`]).
    pub fn thread_locks(mut self, locks: Arc<dyn ThreadLocks>) -> Self {
        self.thread_locks = Some(locks);
        self
    }

    /// The same configuration with run leases (see [`ServerConfig::run_leases`]).
    pub fn run_leases(mut self, leases: Arc<dyn RunLeases>, settings: LeaseSettings) -> Self {
        self.run_leases = Some(leases);
        self.lease = settings;
        self
    }

    /// The same configuration with another registry factory.
    pub fn registry(mut self, registry: RegistryFactory) -> Self {
        self.registry = registry;
        self
    }

    /// The same configuration also serving `page`.
    pub fn page(mut self, page: Page) -> Self {
        self.pages.push(page);
        self
    }

    /// The same configuration also serving the studio ([`studio`]) at `/`, its files under
    /// `/studio/`.
    pub fn studio(mut self) -> Self {
        self.pages.extend(studio::pages());
        self
    }

    /// The same configuration also serving `routes` (handlers take `State<ServerState>`).
    /// Their paths must not be the API's own: axum panics on a route defined twice when the
    /// router is built.
    pub fn routes(mut self, routes: axum::Router<ServerState>) -> Self {
        self.routes.push(routes);
        self
    }

    /// The same configuration also serving `routes`, documented in `/openapi.json`: each
    /// handler carries its `#[utoipa::path]` and is added with `utoipa_axum::routes!`
    /// (this crate re-exports [`utoipa`] and [`utoipa_axum`] at the versions it uses).
    pub fn api_routes(mut self, routes: utoipa_axum::router::OpenApiRouter<ServerState>) -> Self {
        self.api_routes.push(routes);
        self
    }
}

/// The DSL's built-in kinds and the agent kinds (`llm`, `tool_executor`, `compact`,
/// `agent_output`) with no tools: enough for graphs without tools; applications give their
/// own factory in [`ServerConfig::registry`].
pub fn default_registry() -> RegistryFactory {
    Arc::new(|| {
        let mut reg = Registry::default();
        agentgraph_dsl::agents::register(&mut reg, Default::default());
        reg
    })
}

pub(crate) struct Inner {
    pub(crate) graphs: GraphCache,
    pub(crate) events: EventStore,
    pub(crate) checkpointer: Arc<dyn Checkpointer>,
    pub(crate) runs: Mutex<HashMap<String, ActiveRun>>,
    pub(crate) thread_locks: Option<Arc<dyn ThreadLocks>>,
    pub(crate) run_leases: Option<Arc<dyn RunLeases>>,
    pub(crate) lease_settings: LeaseSettings,
    pub(crate) tasks: TaskTracker,
    pub(crate) shutdown: CancellationToken,
    pub(crate) max_body_bytes: usize,
    pub(crate) pages: Vec<Page>,
    pub(crate) routes: Vec<axum::Router<ServerState>>,
    pub(crate) api_routes: Vec<utoipa_axum::router::OpenApiRouter<ServerState>>,
    pub(crate) shutdown_grace: Duration,
    pub(crate) watch: bool,
    pub(crate) auth: AuthState,
    /// The durability of runs whose request names none.
    pub(crate) durability: Durability,
    /// When the server started (`/health`).
    pub(crate) started: std::time::Instant,
}

/// The server's shared state: graphs, checkpointer, event logs and active runs. Cheap to
/// clone; give it to [`router`].
#[derive(Clone)]
pub struct ServerState {
    pub(crate) inner: Arc<Inner>,
}

impl ServerState {
    /// Opens the storage and prepares the graph cache.
    pub fn new(config: &ServerConfig) -> Result<Self, ServerError> {
        if !config.graphs_dir.is_dir() {
            return Err(ServerError::Config(format!(
                "graphs folder {} does not exist",
                config.graphs_dir.display()
            )));
        }
        config.auth.check_startup(config.addr)?;
        let limits = EventLimits {
            events: config.events_per_thread.max(1),
            bytes: config.event_bytes_per_thread,
        };
        let (mut storage, events): (GraphStorage, EventStore) = match &config.storage {
            Storage::Sled(dir) => {
                // Many concurrent runs: sled's page compression costs the merge a zstd context
                // (and a trapped `cpuid`) per logged message, so a new store compresses values.
                let options = SledOptions::from_env_or(SledCompression::Values);
                let cp = SledCheckpointer::open_with(dir, options)
                    .map_err(|e| ServerError::Storage(e.to_string()))?;
                let events = EventStore::beside(cp.store(), limits)?;
                (
                    GraphStorage::sled(cp).map_err(|e| ServerError::Storage(e.to_string()))?,
                    events,
                )
            }
            Storage::Checkpointer {
                checkpointer,
                events_dir,
            } => (
                GraphStorage::checkpoints(checkpointer.clone()),
                match events_dir {
                    Some(d) => EventStore::open(d, limits)?,
                    None => EventStore::memory(limits),
                },
            ),
            Storage::Memory => (
                GraphStorage {
                    checkpointer: Arc::new(MemoryCheckpointer::new()),
                    store: Some(Arc::new(InMemoryStore::new())),
                    cache: Some(Arc::new(StoreCache::in_memory())),
                },
                EventStore::memory(limits),
            ),
        };
        if let Some(s) = &config.store {
            storage.store = Some(s.clone());
        }
        if let Some(c) = &config.node_cache {
            storage.cache = Some(c.clone());
        }
        let checkpointer = storage.checkpointer.clone();
        // Versions no thread is pinned to any more (their runs ended before the restart).
        match events.prune_versions() {
            Ok(0) => {}
            Ok(n) => tracing::debug!("dropped {n} unused graph version(s)"),
            Err(e) => tracing::warn!("cannot prune stored graph versions: {e}"),
        }
        // Runs a previous process left mid-way (killed, crashed) get their end event; with
        // run leases, a server (this one too) picks them up once their lease expires.
        let closed = match config.run_leases {
            Some(_) => events.close_unfinished_runs_because(
                "the server stopped during the run; a server sharing the database continues it \
                 once its lease expires",
            )?,
            None => events.close_unfinished_runs()?,
        };
        let next = match config.run_leases {
            Some(_) => "a server picks it up once its lease expires",
            None => "POST /threads/{id}/resume continues it",
        };
        for thread in closed {
            tracing::warn!(
                thread = %thread,
                "the server stopped during a run on this thread; logged it as interrupted \
                 ({next})"
            );
        }
        let owners = Owners::open(&events, config.store.clone())?;
        Ok(ServerState {
            inner: Arc::new(Inner {
                started: std::time::Instant::now(),
                auth: AuthState::new(config.auth.clone(), config.addr, owners),
                graphs: GraphCache::new(
                    config.graphs_dir.clone(),
                    config.registry.clone(),
                    storage,
                ),
                events,
                checkpointer,
                runs: Mutex::new(HashMap::new()),
                thread_locks: config.thread_locks.clone(),
                run_leases: config.run_leases.clone(),
                lease_settings: config.lease,
                tasks: TaskTracker::new(),
                shutdown: CancellationToken::new(),
                max_body_bytes: config.max_body_bytes,
                pages: config.pages.clone(),
                routes: config.routes.clone(),
                api_routes: config.api_routes.clone(),
                shutdown_grace: config.shutdown_grace,
                durability: config.durability,
                watch: config.watch,
            }),
        })
    }

    /// The graph cache (for live reload).
    pub fn graphs(&self) -> &GraphCache {
        &self.inner.graphs
    }

    /// The event logs.
    pub fn events(&self) -> &EventStore {
        &self.inner.events
    }

    /// The checkpointer every graph uses.
    pub fn checkpointer(&self) -> &Arc<dyn Checkpointer> {
        &self.inner.checkpointer
    }

    /// Threads with a run in flight.
    pub fn active_threads(&self) -> Vec<String> {
        self.runs().keys().cloned().collect()
    }

    pub(crate) fn runs(&self) -> MutexGuard<'_, HashMap<String, ActiveRun>> {
        self.inner.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops new runs, ends event streams, cancels the runs in flight and waits (up to the
    /// configured grace) until they have written their checkpoint; then flushes storage.
    pub async fn shutdown(&self) -> Result<(), ServerError> {
        self.inner.shutdown.cancel();
        for run in self.runs().values() {
            run.cancel.cancel();
        }
        self.inner.tasks.close();
        if tokio::time::timeout(self.inner.shutdown_grace, self.inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("shutdown: runs still in flight after the grace period");
        }
        self.inner
            .checkpointer
            .flush()
            .await
            .map_err(|e| ServerError::Storage(e.to_string()))?;
        self.inner.events.flush()
    }
}

/// Serves on `config.addr` until `shutdown` completes, then shuts down gracefully: stops
/// accepting, ends event streams, cancels in-flight runs so they checkpoint, flushes storage.
pub async fn serve(
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let state = ServerState::new(&config)?;
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "agentgraph server listening");
    serve_on(listener, state, shutdown).await
}

/// Like [`serve`], on a bound listener with a prepared state (for tests and embedding).
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    state: ServerState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    if let Ok(bound) = listener.local_addr() {
        let _ = state.inner.auth.bound.set(bound);
    }
    let app = router(state.clone());
    let stopping = state.clone();
    let watcher = state
        .inner
        .watch
        .then(|| spawn_watcher(state.clone(), DEFAULT_WATCH_INTERVAL));
    // Renews this server's run leases and picks up runs other servers left.
    let heartbeat = state
        .inner
        .run_leases
        .clone()
        .map(|leases| tokio::spawn(run_lease::heartbeat(state.clone(), leases)));
    // Send each SSE event at once: without TCP_NODELAY the first event waits for the
    // client's delayed ACK (a ~40 ms floor per run on loopback, see docs/benchmarks.md).
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            // End SSE streams and cancel runs so open connections can close.
            stopping.inner.shutdown.cancel();
            for run in stopping.runs().values() {
                run.cancel.cancel();
            }
        })
        .await?;
    let done = state.shutdown().await;
    if let Some(h) = heartbeat {
        let _ = h.await;
    }
    if let Some(w) = watcher {
        // The shutdown token stops it; wait for a poll in progress.
        let _ = w.await;
    }
    done
}
