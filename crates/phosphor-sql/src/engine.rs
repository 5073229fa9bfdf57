//! [`Session`]: SQL over trace files, on an embedded DataFusion.
//!
//! Each table is a DataFusion table provider with one partition per trace file: a query that
//! scans it reads the file then, making only the columns the query uses (its projection, which
//! DataFusion pushes down to the scan), on a blocking thread of the session's runtime, and hands its
//! batches over a channel of two batches, so a scan holds a few batches whatever the file's
//! size, and the files of a folder are read in parallel. Nothing is read when a session is made
//! but each file's header (a file that is no trace fails there, named).
//!
//! A folder of Parquet tables (`phosphor convert --to parquet`) is registered as it is: each
//! `TABLE.parquet` file as table `TABLE`, and each folder `TABLE/` of Hive partitions
//! `trace=VALUE/*.parquet` ([`Layout::ByTrace`](crate::Layout::ByTrace)) as table `TABLE`, its
//! `trace` column the partition's value, first as in a trace's tables.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::datasource::TableType;
use datafusion::error::DataFusionError;
use datafusion::execution::context::{SessionConfig, SessionContext};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::stream::RecordBatchReceiverStream;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use datafusion::prelude::{ident, lit, DataFrame, ParquetReadOptions};
use futures::StreamExt;
use parquet::arrow::ArrowWriter;

use crate::parquet_out::{partition_value_decoded, writer_properties_for, PARTITION_COLUMN};
use crate::read::{read_columns, TraceSource};
use crate::tables::Table;
use crate::Error;

/// How query results are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output {
    /// An aligned text table (Arrow's pretty printer), once the whole result is in.
    Table,
    /// CSV with a header line, streamed.
    Csv,
    /// JSON Lines, an object per row, streamed.
    Json,
    /// A Parquet file ([`writer_properties_for`] its columns), streamed: to a file only ([`Session::write_file`]).
    Parquet,
}

impl Output {
    /// The format a file's name asks for by its extension: `.parquet`, `.csv`, `.json`,
    /// `.jsonl` or `.ndjson` (JSON Lines), `.txt` (a table); `None` for any other.
    pub fn of_file(path: &Path) -> Option<Output> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "parquet" => Some(Output::Parquet),
            "csv" => Some(Output::Csv),
            "json" | "jsonl" | "ndjson" => Some(Output::Json),
            "txt" => Some(Output::Table),
            _ => None,
        }
    }
}

/// A SQL session over trace files and Parquet folders.
pub struct Session {
    /// Always `Some` but in `drop`, which shuts it down without waiting.
    runtime: Option<tokio::runtime::Runtime>,
    ctx: SessionContext,
    /// The first read error of a scan: a query that fails for it returns it whole (the file and
    /// the byte offset), not DataFusion's text of it.
    failure: Failure,
    /// SIGINT, once Ctrl-C stops a running query ([`Session::interrupt_on_ctrl_c`]).
    #[cfg(unix)]
    interrupts: Option<Mutex<tokio::signal::unix::Signal>>,
    #[cfg(not(unix))]
    interrupts: Option<Mutex<()>>,
}

/// Where a scan leaves its read error for the session.
type Failure = Arc<Mutex<Option<Error>>>;

impl Drop for Session {
    fn drop(&mut self) {
        // A query stopped by Ctrl-C may leave an operator computing until its next yield point,
        // and a scan waiting to hand it a batch: the session's end does not wait for them.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("session_id", &self.ctx.session_id()).finish_non_exhaustive()
    }
}

impl Session {
    /// A session whose tables are those of `traces` (their rows together, told apart by
    /// `trace`, each file's times moved by its [`TraceSource::shift_ns`]: [`crate::align`] puts
    /// several files on one timeline), checking that each opens as a trace file; or, if `traces`
    /// is empty, of the Parquet folder `parquet` when given.
    pub fn new(traces: &[TraceSource], parquet: Option<&Path>) -> Result<Session, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|source| Error::Open { path: PathBuf::from("(tokio runtime)"), source })?;
        let config = SessionConfig::new().with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        let failure = Failure::default();
        for source in traces {
            // The header now, so that a file that is no trace is named before any query.
            source.open()?;
        }
        if !traces.is_empty() {
            for table in Table::ALL {
                let schema = table.schema();
                let provider =
                    TraceTable { table, schema, sources: traces.to_vec(), failure: failure.clone() };
                ctx.register_table(table.name(), Arc::new(provider)).map_err(sql_error)?;
            }
        } else if let Some(dir) = parquet {
            runtime.block_on(register_parquet(&ctx, dir))?;
        }
        Ok(Session { runtime: Some(runtime), ctx, failure, interrupts: None })
    }

    /// Runs `query` and collects its result.
    pub fn query(&self, query: &str) -> Result<Vec<RecordBatch>, Error> {
        self.error_left();
        self.block_on(async {
            let frame = self.ctx.sql(query).await.map_err(|e| self.error(e))?;
            frame.collect().await.map_err(|e| self.error(e))
        })
    }

    /// The error of a query that failed with `e`: the read error a scan left, if any.
    fn error(&self, e: impl Into<DataFusionError>) -> Error {
        self.error_left().unwrap_or_else(|| sql_error(e))
    }

    /// Takes the read error a scan left.
    fn error_left(&self) -> Option<Error> {
        self.failure.lock().map(|mut f| f.take()).unwrap_or_else(|p| p.into_inner().take())
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime is taken only when the session is dropped")
    }

    /// Makes Ctrl-C (SIGINT) stop a running query, which then fails with
    /// [`Error::Interrupted`], its scans stopped and their files closed, instead of ending the
    /// process: for an interactive prompt. The process's SIGINT is this session's from now on
    /// (a terminal in raw mode, as a line editor sets it, sends no signal: Ctrl-C there is a
    /// key). A Ctrl-C between queries stops the next one as it starts; one during the stopping
    /// or after the end of a query is forgotten. Returns whether SIGINT could be taken (not on
    /// a platform without it).
    pub fn interrupt_on_ctrl_c(&mut self) -> bool {
        #[cfg(unix)]
        {
            let _in_runtime = self.runtime().enter();
            if let Ok(signal) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
                self.interrupts = Some(Mutex::new(signal));
            }
        }
        self.interrupts.is_some()
    }

    /// Runs `work` on the session's runtime; with [`Session::interrupt_on_ctrl_c`], until Ctrl-C.
    /// Stopping drops `work`: its streams close, and the scans' readers stop at their next batch.
    fn block_on<T>(&self, work: impl std::future::Future<Output = Result<T, Error>>) -> Result<T, Error> {
        #[cfg(unix)]
        if let Some(interrupts) = &self.interrupts {
            let mut signal = interrupts.lock().unwrap_or_else(|p| p.into_inner());
            return self.runtime().block_on(async {
                let done = tokio::select! {
                    done = work => done,
                    _ = signal.recv() => Err(Error::Interrupted),
                };
                // A Ctrl-C that came while stopping, or after the result: not for the next query.
                while let Some(Some(())) = futures::FutureExt::now_or_never(signal.recv()) {}
                done
            });
        }
        self.runtime().block_on(work)
    }

    /// Runs `query` and writes its result to `out` as `output` says (not [`Output::Parquet`],
    /// which [`Session::write_file`] writes).
    pub fn run(&self, query: &str, output: Output, out: &mut dyn Write) -> Result<(), Error> {
        self.run_counted(query, output, out).map(|_| ())
    }

    /// Runs `query` and writes its result to the file `path` (created or truncated) as `output`
    /// says: Parquet, CSV and JSON Lines streamed batch by batch. Returns the rows written. On
    /// an error the file is removed.
    pub fn write_file(&self, query: &str, output: Output, path: &Path) -> Result<u64, Error> {
        let file = File::create(path).map_err(|source| Error::Open { path: path.to_path_buf(), source })?;
        let written = if output == Output::Parquet {
            self.write_parquet_file(query, file, path)
        } else {
            let mut out = BufWriter::new(file);
            let io = |source| Error::Open { path: path.to_path_buf(), source };
            self.run_counted(query, output, &mut out).and_then(|rows| out.flush().map(|()| rows).map_err(io))
        };
        if written.is_err() {
            let _ = std::fs::remove_file(path);
        }
        written
    }

    /// [`Session::run`], counting the rows written.
    fn run_counted(&self, query: &str, output: Output, out: &mut dyn Write) -> Result<u64, Error> {
        if output == Output::Parquet {
            return Err(Error::Sql("Parquet is written to a file (Session::write_file)".into()));
        }
        if output == Output::Table {
            let batches = self.query(query)?;
            let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
            let table = arrow::util::pretty::pretty_format_batches(&batches).map_err(sql_error)?;
            writeln!(out, "{table}")
                .map_err(|source| Error::Open { path: PathBuf::from("(output)"), source })?;
            return Ok(rows);
        }
        self.error_left();
        self.block_on(async {
            let frame = self.ctx.sql(query).await.map_err(|e| self.error(e))?;
            let mut stream = frame.execute_stream().await.map_err(|e| self.error(e))?;
            let mut rows = 0u64;
            if output == Output::Csv {
                let mut csv = arrow::csv::WriterBuilder::new().with_header(true).build(&mut *out);
                while let Some(batch) = stream.next().await {
                    let batch = batch.map_err(|e| self.error(e))?;
                    rows += batch.num_rows() as u64;
                    csv.write(&batch).map_err(sql_error)?;
                }
                return Ok(rows);
            }
            let mut json = arrow::json::LineDelimitedWriter::new(&mut *out);
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(|e| self.error(e))?;
                rows += batch.num_rows() as u64;
                json.write(&batch).map_err(sql_error)?;
            }
            json.finish().map_err(sql_error)?;
            Ok(rows)
        })
    }

    /// The result of `query` as a Parquet file written to `file` (at `path`).
    fn write_parquet_file(&self, query: &str, file: File, path: &Path) -> Result<u64, Error> {
        let parquet = |source| Error::Parquet { path: path.to_path_buf(), source };
        self.error_left();
        self.block_on(async {
            let frame = self.ctx.sql(query).await.map_err(|e| self.error(e))?;
            let mut stream = frame.execute_stream().await.map_err(|e| self.error(e))?;
            let properties = writer_properties_for(&stream.schema());
            let mut writer =
                ArrowWriter::try_new(file, stream.schema(), Some(properties)).map_err(parquet)?;
            let mut rows = 0u64;
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(|e| self.error(e))?;
                rows += batch.num_rows() as u64;
                writer.write(&batch).map_err(parquet)?;
            }
            writer.close().map_err(parquet)?;
            Ok(rows)
        })
    }

    /// Runs `query` and prints its first `max_rows` rows as a table to `out`; returns how many
    /// rows the result has (all counted, only `max_rows` kept).
    pub fn run_table(&self, query: &str, max_rows: usize, out: &mut dyn Write) -> Result<u64, Error> {
        self.error_left();
        let (kept, rows) = self.block_on(async {
            let frame = self.ctx.sql(query).await.map_err(|e| self.error(e))?;
            let mut stream = frame.execute_stream().await.map_err(|e| self.error(e))?;
            let (mut kept, mut held, mut rows) = (Vec::new(), 0usize, 0u64);
            while let Some(batch) = stream.next().await {
                let batch = batch.map_err(|e| self.error(e))?;
                rows += batch.num_rows() as u64;
                if held < max_rows {
                    let take = batch.num_rows().min(max_rows - held);
                    held += take;
                    kept.push(batch.slice(0, take));
                }
            }
            if kept.is_empty() {
                kept.push(RecordBatch::new_empty(stream.schema()));
            }
            Ok::<_, Error>((kept, rows))
        })?;
        let table = arrow::util::pretty::pretty_format_batches(&kept).map_err(sql_error)?;
        writeln!(out, "{table}").map_err(|source| Error::Open { path: PathBuf::from("(output)"), source })?;
        Ok(rows)
    }
}

/// Registers each `TABLE.parquet` of `dir` as table `TABLE`, and each folder `TABLE/` of
/// partitions `trace=VALUE/` as table `TABLE` ([`register_partitions`]).
async fn register_parquet(ctx: &SessionContext, dir: &Path) -> Result<(), Error> {
    let open = |source| Error::Open { path: dir.to_path_buf(), source };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(open)? {
        paths.push(entry.map_err(open)?.path());
    }
    paths.sort();
    for path in paths {
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else { continue };
        if let Some(name) = file_name.strip_suffix(".parquet").filter(|_| path.is_file()) {
            if path.with_extension("").is_dir() {
                let both =
                    std::io::Error::other(format!("both {name}.parquet and the partitions {name}/: which?"));
                return Err(Error::Open { path: dir.to_path_buf(), source: both });
            }
            let location = path.to_string_lossy();
            ctx.register_parquet(name, location.as_ref(), ParquetReadOptions::default())
                .await
                .map_err(sql_error)?;
        } else if path.is_dir() {
            register_partitions(ctx, file_name, &path).await?;
        }
    }
    Ok(())
}

/// Whether `dir` is a folder of Parquet tables: `slices.parquet`, or partitions `slices/trace=…/`.
pub fn is_parquet_folder(dir: &Path) -> bool {
    dir.join("slices.parquet").is_file() || !partitions(&dir.join("slices")).unwrap_or_default().is_empty()
}

/// The partitions `trace=VALUE/` of a table's folder: each folder, and its value decoded.
fn partitions(table_dir: &Path) -> Result<Vec<(PathBuf, String)>, Error> {
    let open = |source| Error::Open { path: table_dir.to_path_buf(), source };
    let prefix = format!("{PARTITION_COLUMN}=");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(table_dir).map_err(open)? {
        let path = entry.map_err(open)?.path();
        let Some(value) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix(&prefix))
        else {
            continue;
        };
        if path.is_dir() {
            let Some(value) = partition_value_decoded(value) else {
                let bad = std::io::Error::other("the partition's value is not UTF-8 once %-decoded");
                return Err(Error::Open { path, source: bad });
            };
            found.push((path, value));
        }
    }
    found.sort();
    Ok(found)
}

/// Registers the partitions `trace=VALUE/` of folder `dir` as table `name`: each partition's
/// Parquet files with a first column `trace`, `VALUE` (percent-decoded), all partitions' rows
/// together. A folder without partitions is no table.
async fn register_partitions(ctx: &SessionContext, name: &str, dir: &Path) -> Result<(), Error> {
    let mut union: Option<DataFrame> = None;
    for (path, value) in partitions(dir)? {
        let location = format!("{}/", path.to_string_lossy());
        let frame = ctx.read_parquet(location, ParquetReadOptions::default()).await.map_err(sql_error)?;
        if frame.schema().has_column_with_unqualified_name(PARTITION_COLUMN) {
            let twice = std::io::Error::other("its files have a `trace` column too: which?");
            return Err(Error::Open { path, source: twice });
        }
        let mut columns = vec![lit(value).alias(PARTITION_COLUMN)];
        columns.extend(frame.schema().fields().iter().map(|f| ident(f.name())));
        let frame = frame.select(columns).map_err(sql_error)?;
        union = Some(match union {
            Some(all) => all.union(frame).map_err(sql_error)?,
            None => frame,
        });
    }
    if let Some(all) = union {
        ctx.register_table(name, all.into_view()).map_err(sql_error)?;
    }
    Ok(())
}

/// An error of the engine (parsing, planning, running the query).
fn sql_error(e: impl Into<DataFusionError>) -> Error {
    Error::Sql(e.into().to_string())
}

/// One table of trace files: a scan reads only the columns the query uses (its projection),
/// each file in a partition of its own.
#[derive(Debug)]
struct TraceTable {
    table: Table,
    schema: SchemaRef,
    sources: Vec<TraceSource>,
    failure: Failure,
}

#[async_trait::async_trait]
impl TableProvider for TraceTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&columns)?);
        let partitions: Vec<Arc<dyn PartitionStream>> = self
            .sources
            .iter()
            .map(|source| {
                let partition = TracePartition {
                    source: source.clone(),
                    table: self.table,
                    columns: columns.clone(),
                    schema: schema.clone(),
                    failure: self.failure.clone(),
                };
                Arc::new(partition) as Arc<dyn PartitionStream>
            })
            .collect();
        let exec = StreamingTableExec::try_new(schema, partitions, None, Vec::new(), false, limit)?;
        Ok(Arc::new(exec))
    }
}

/// One table of one trace file, read when a query scans it.
#[derive(Debug)]
struct TracePartition {
    source: TraceSource,
    table: Table,
    /// The columns made, indices into the table's schema.
    columns: Vec<usize>,
    /// Their schema.
    schema: SchemaRef,
    failure: Failure,
}

impl PartitionStream for TracePartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let mut builder = RecordBatchReceiverStream::builder(self.schema.clone(), 2);
        let tx = builder.tx();
        let (source, table, failure) = (self.source.clone(), self.table, self.failure.clone());
        let columns = self.columns.clone();
        let batch_rows = ctx.session_config().batch_size();
        // The reader nests slices and marks together whatever the tables asked for, so the ids
        // of every table agree with each other's and with those of the Parquet files.
        builder.spawn_blocking(move || {
            let sent = read_columns(&source, table, &columns, batch_rows, |_, batch| {
                // The query needs no more rows (a LIMIT) or failed: stop reading.
                tx.blocking_send(Ok(batch)).map_err(|_| Error::Stopped)
            });
            match sent {
                Ok(()) | Err(Error::Stopped) => Ok(()),
                Err(e) => {
                    let text = e.to_string();
                    if let Ok(mut slot) = failure.lock() {
                        slot.get_or_insert(e);
                    }
                    Err(DataFusionError::Execution(text))
                }
            }
        });
        builder.build()
    }
}
