//! [`Session`]: SQL over trace files, on an embedded DataFusion.
//!
//! Each table is a DataFusion `StreamingTable` with one partition per trace file: a query that
//! scans it reads the file then, on a blocking thread of the session's runtime, and hands its
//! batches over a channel of two batches, so a scan holds a few batches whatever the file's
//! size, and the files of a folder are read in parallel. Nothing is read when a session is made
//! but each file's header (a file that is no trace fails there, named).
//!
//! A folder of Parquet tables (`phosphor convert --to parquet`) is registered as it is: each
//! `TABLE.parquet` file as table `TABLE`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::error::DataFusionError;
use datafusion::execution::context::{SessionConfig, SessionContext};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::stream::RecordBatchReceiverStream;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::ParquetReadOptions;
use futures::StreamExt;

use crate::read::{read_tables, TraceSource};
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
}

/// A SQL session over trace files and Parquet folders.
pub struct Session {
    runtime: tokio::runtime::Runtime,
    ctx: SessionContext,
    /// The first read error of a scan: a query that fails for it returns it whole (the file and
    /// the byte offset), not DataFusion's text of it.
    failure: Failure,
}

/// Where a scan leaves its read error for the session.
type Failure = Arc<Mutex<Option<Error>>>;

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("session_id", &self.ctx.session_id()).finish_non_exhaustive()
    }
}

impl Session {
    /// A session whose tables are those of `traces` (their rows together, told apart by
    /// `trace`), checking that each opens as a trace file; or, if `traces` is empty, of the
    /// Parquet folder `parquet` when given.
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
                let partitions: Vec<Arc<dyn PartitionStream>> = traces
                    .iter()
                    .map(|source| {
                        let failure = failure.clone();
                        let partition =
                            TracePartition { source: source.clone(), table, schema: schema.clone(), failure };
                        Arc::new(partition) as Arc<dyn PartitionStream>
                    })
                    .collect();
                let provider = StreamingTable::try_new(schema, partitions).map_err(sql_error)?;
                ctx.register_table(table.name(), Arc::new(provider)).map_err(sql_error)?;
            }
        } else if let Some(dir) = parquet {
            runtime.block_on(register_parquet(&ctx, dir))?;
        }
        Ok(Session { runtime, ctx, failure })
    }

    /// Runs `query` and collects its result.
    pub fn query(&self, query: &str) -> Result<Vec<RecordBatch>, Error> {
        self.error_left();
        let result = self.runtime.block_on(async { self.ctx.sql(query).await?.collect().await });
        result.map_err(|e| self.error(e))
    }

    /// The error of a query that failed with `e`: the read error a scan left, if any.
    fn error(&self, e: impl Into<DataFusionError>) -> Error {
        self.error_left().unwrap_or_else(|| sql_error(e))
    }

    /// Takes the read error a scan left.
    fn error_left(&self) -> Option<Error> {
        self.failure.lock().map(|mut f| f.take()).unwrap_or_else(|p| p.into_inner().take())
    }

    /// Runs `query` and writes its result to `out` as `output` says.
    pub fn run(&self, query: &str, output: Output, out: &mut dyn Write) -> Result<(), Error> {
        let io = |source| Error::Open { path: PathBuf::from("(output)"), source };
        if output == Output::Table {
            let batches = self.query(query)?;
            let table = arrow::util::pretty::pretty_format_batches(&batches).map_err(sql_error)?;
            return writeln!(out, "{table}").map_err(io);
        }
        self.error_left();
        self.runtime.block_on(async {
            let frame = self.ctx.sql(query).await.map_err(|e| self.error(e))?;
            let mut stream = frame.execute_stream().await.map_err(|e| self.error(e))?;
            if output == Output::Csv {
                let mut csv = arrow::csv::WriterBuilder::new().with_header(true).build(&mut *out);
                while let Some(batch) = stream.next().await {
                    csv.write(&batch.map_err(|e| self.error(e))?).map_err(sql_error)?;
                }
                return Ok(());
            }
            let mut json = arrow::json::LineDelimitedWriter::new(&mut *out);
            while let Some(batch) = stream.next().await {
                json.write(&batch.map_err(|e| self.error(e))?).map_err(sql_error)?;
            }
            json.finish().map_err(sql_error)
        })
    }
}

/// Registers each `TABLE.parquet` of `dir` as table `TABLE`.
async fn register_parquet(ctx: &SessionContext, dir: &Path) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Open { path: dir.to_path_buf(), source })?;
    for entry in entries {
        let path = entry.map_err(|source| Error::Open { path: dir.to_path_buf(), source })?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".parquet"))
        else {
            continue;
        };
        let location = path.to_string_lossy();
        ctx.register_parquet(name, location.as_ref(), ParquetReadOptions::default())
            .await
            .map_err(sql_error)?;
    }
    Ok(())
}

/// An error of the engine (parsing, planning, running the query).
fn sql_error(e: impl Into<DataFusionError>) -> Error {
    Error::Sql(e.into().to_string())
}

/// One table of one trace file, read when a query scans it.
#[derive(Debug)]
struct TracePartition {
    source: TraceSource,
    table: Table,
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
        let batch_rows = ctx.session_config().batch_size();
        builder.spawn_blocking(move || {
            let sent = read_tables(&source, &[table], batch_rows, |_, batch| {
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
