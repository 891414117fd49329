//! `review-bot replies …`: move reply tracking in and out of the store.
//!
//! `import` reads the seed's phase-1 reply file (`{"replies": [...]}`) into the
//! store; `export` writes the store's replies in the same format, as a backup or
//! to move them to another database.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};
use review_store::Store;
use review_store::reply_file::{self, NaiveTimestamps};

/// `replies` subcommands.
#[derive(Debug, Subcommand)]
pub enum RepliesCommand {
    /// Import a reply file into the store. Safe to run again: replies already
    /// in the store are counted, not duplicated. Exits 1 if any record was
    /// malformed (the others are still imported).
    Import(ImportArgs),
    /// Write every reply in the store to standard output, in the reply-file
    /// format `import` reads.
    Export(ExportArgs),
}

/// Where the store is; shared by every command that touches it.
#[derive(Debug, Args)]
pub struct DatabaseArgs {
    /// The store: `sqlite://PATH` or `postgres://USER@HOST/DATABASE`. Default: a
    /// SQLite file in your data directory
    /// (`$XDG_DATA_HOME/review-bot/review-bot.sqlite3`).
    #[arg(
        long,
        value_name = "URL",
        env = "REVIEW_BOT_DATABASE_URL",
        hide_env_values = true
    )]
    pub database: Option<String>,
}

impl DatabaseArgs {
    /// Opens (creating or migrating) the store.
    pub async fn open(&self) -> anyhow::Result<Store> {
        let store = match &self.database {
            Some(url) => Store::open(url).await?,
            None => Store::open_default().await?,
        };
        Ok(store)
    }
}

/// Arguments of `replies import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The reply file; `-` reads standard input.
    pub file: PathBuf,

    /// How to read a `replied_at` with no UTC offset (the seed wrote
    /// `datetime.now()`, the writing host's local time).
    #[arg(long, value_enum, default_value_t = NaiveTimezone::Local)]
    pub naive_timezone: NaiveTimezone,

    #[command(flatten)]
    pub database: DatabaseArgs,
}

/// The time zone of timestamps without an offset.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum NaiveTimezone {
    /// This machine's time zone.
    Local,
    /// UTC.
    Utc,
}

/// Arguments of `replies export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
}

pub fn run(command: &RepliesCommand) -> anyhow::Result<ExitCode> {
    match command {
        RepliesCommand::Import(args) => super::block_on(import(args))?,
        RepliesCommand::Export(args) => super::block_on(export(args))?,
    }
}

async fn import(args: &ImportArgs) -> anyhow::Result<ExitCode> {
    let name = args.file.display().to_string();
    let bytes = if name == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("could not read the reply file from standard input")?;
        bytes
    } else {
        std::fs::read(&args.file).with_context(|| format!("could not read {name}"))?
    };
    let text = String::from_utf8(bytes).map_err(|error| {
        anyhow::anyhow!(
            "{name} is not a reply file: byte {} is not UTF-8 text (a reply file is JSON)",
            error.utf8_error().valid_up_to()
        )
    })?;
    let naive = match args.naive_timezone {
        NaiveTimezone::Local => NaiveTimestamps::Local,
        NaiveTimezone::Utc => NaiveTimestamps::Utc,
    };
    let parsed =
        reply_file::parse(&text, naive).with_context(|| format!("{name} is not a reply file"))?;

    // Report bad records before touching the store, so they are seen even if
    // the database cannot be opened.
    for bad in &parsed.malformed {
        eprintln!(
            "{name}: record at index {} skipped: {}",
            bad.index, bad.reason
        );
    }
    let store = args.database.open().await?;
    let summary = store.import_replies(&parsed.replies).await?;
    store.close().await;

    let total = parsed.replies.len() + parsed.malformed.len();
    println!("{total} records in {name}, into {}:", store.location());
    println!("  {} imported", summary.imported);
    println!("  {} already present", summary.already_present);
    println!(
        "  {} repeated in the file (earliest kept)",
        summary.duplicates_in_input
    );
    println!("  {} malformed, skipped", parsed.malformed.len());
    Ok(if parsed.malformed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

async fn export(args: &ExportArgs) -> anyhow::Result<ExitCode> {
    let store = args.database.open().await?;
    let replies = store.all_replies().await?;
    store.close().await;
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    reply_file::write(&mut stdout, &replies)
        .and_then(|()| stdout.flush())
        .context("could not write the replies to standard output")?;
    eprintln!(
        "exported {} replies from {}",
        replies.len(),
        store.location()
    );
    Ok(ExitCode::SUCCESS)
}
