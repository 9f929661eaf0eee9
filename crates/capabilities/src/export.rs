//! Tables exported as CSV and XLSX.
//!
//! A [`Table`] is a list of [`Column`]s and rows of typed [`Cell`]s. [`write_csv`] and
//! [`write_xlsx`] write it to a file atomically: the bytes go to a temporary file in the
//! same directory, which is then renamed over the destination, so a reader never sees a
//! half-written file.
//!
//! ```
//! use job_capabilities::export::{Cell, Column, Table, write_csv, write_xlsx};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut table = Table::new(vec![Column::new("Company", 24.0), Column::new("Salary", 12.0)]);
//! table.push_row(vec![Cell::from("Acme"), Cell::Number(120_000.0)])?;
//! let dir = std::env::temp_dir().join(format!("export-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! write_csv(&table, &dir.join("jobs.csv"))?;
//! write_xlsx(&table, &dir.join("jobs.xlsx"), "Jobs")?;
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{Datelike, NaiveDate};
use rust_xlsxwriter::{ExcelDateTime, Format, Url, Workbook, Worksheet, XlsxError};

/// One cell of a [`Table`].
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Nothing.
    Empty,
    /// Plain text.
    Text(String),
    /// A number shown with two decimals in XLSX.
    Number(f64),
    /// A whole number.
    Integer(i64),
    /// A hyperlink: `text` is shown, `url` is followed (CSV writes the url).
    Link {
        /// Where the link goes.
        url: String,
        /// What the cell shows.
        text: String,
    },
    /// A calendar date (`yyyy-mm-dd`).
    Date(NaiveDate),
}

impl From<&str> for Cell {
    fn from(value: &str) -> Self {
        Cell::Text(value.to_owned())
    }
}

impl From<String> for Cell {
    fn from(value: String) -> Self {
        Cell::Text(value)
    }
}

impl From<f64> for Cell {
    fn from(value: f64) -> Self {
        Cell::Number(value)
    }
}

impl From<i64> for Cell {
    fn from(value: i64) -> Self {
        Cell::Integer(value)
    }
}

impl From<NaiveDate> for Cell {
    fn from(value: NaiveDate) -> Self {
        Cell::Date(value)
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(value: Option<T>) -> Self {
        value.map_or(Cell::Empty, Into::into)
    }
}

/// A column: its header text and its width in XLSX (in Excel character units).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The header row's text.
    pub header: String,
    /// The width in Excel character units (about 8.43 is Excel's default).
    pub width: f64,
}

impl Column {
    /// A column with this header and width.
    pub fn new(header: impl Into<String>, width: f64) -> Self {
        Column {
            header: header.into(),
            width,
        }
    }
}

/// A table of typed cells under named columns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// The columns, in order.
    pub columns: Vec<Column>,
    /// The data rows (without the header); each has at most `columns.len()` cells.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(columns: Vec<Column>) -> Self {
        Table {
            columns,
            rows: Vec::new(),
        }
    }

    /// Appends a row. A row shorter than the columns is padded with [`Cell::Empty`]; a
    /// longer one is refused with [`ExportError::RowTooLong`] (nothing is appended).
    ///
    /// ```
    /// use job_capabilities::export::{Cell, Column, ExportError, Table};
    ///
    /// # fn main() -> Result<(), ExportError> {
    /// let mut table = Table::new(vec![Column::new("A", 10.0), Column::new("B", 10.0)]);
    /// table.push_row(vec![Cell::Integer(1)])?;
    /// assert_eq!(table.rows[0], vec![Cell::Integer(1), Cell::Empty]);
    /// let refused = table.push_row(vec![Cell::Empty, Cell::Empty, Cell::Empty]);
    /// assert!(matches!(refused, Err(ExportError::RowTooLong { row: 1, cells: 3, columns: 2 })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn push_row(&mut self, mut cells: Vec<Cell>) -> Result<(), ExportError> {
        let columns = self.columns.len();
        if cells.len() > columns {
            return Err(ExportError::RowTooLong {
                row: self.rows.len(),
                cells: cells.len(),
                columns,
            });
        }
        cells.resize(columns, Cell::Empty);
        self.rows.push(cells);
        Ok(())
    }
}

/// Why a table could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading or writing a file failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The XLSX writer refused the content (bad sheet name, Excel limits exceeded, ...).
    #[error("cannot build the XLSX workbook: {0}")]
    Xlsx(String),
    /// A row had more cells than the table has columns.
    #[error("row {row} has {cells} cells but the table has {columns} columns")]
    RowTooLong {
        /// The 0-based index of the data row.
        row: usize,
        /// How many cells it had.
        cells: usize,
        /// How many columns the table has.
        columns: usize,
    },
}

impl From<XlsxError> for ExportError {
    fn from(err: XlsxError) -> Self {
        ExportError::Xlsx(err.to_string())
    }
}

/// Writes the table as CSV (UTF-8, comma separated, a header row first).
///
/// Cells are written as: [`Cell::Link`] → its url, [`Cell::Number`] → the shortest
/// decimal that reads back as the same number (`120000`, `1.5`), [`Cell::Date`] →
/// `yyyy-mm-dd`, [`Cell::Empty`] → an empty field. Text that a spreadsheet would take for
/// a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a
/// leading apostrophe, guarding against CSV formula injection. The file is replaced
/// atomically.
///
/// ```
/// use job_capabilities::export::{Cell, Column, Table, write_csv};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut table = Table::new(vec![Column::new("Title", 30.0)]);
/// table.push_row(vec![Cell::from("=HYPERLINK(\"evil\")")])?;
/// let path = std::env::temp_dir().join(format!("export-csv-doc-{}.csv", std::process::id()));
/// write_csv(&table, &path)?;
/// assert_eq!(std::fs::read_to_string(&path)?, "Title\n\"'=HYPERLINK(\"\"evil\"\")\"\n");
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
pub fn write_csv(table: &Table, path: &Path) -> Result<(), ExportError> {
    let io_err = |source: std::io::Error| ExportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut writer = csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    let header: Vec<String> = table
        .columns
        .iter()
        .map(|c| guard_formula(&c.header))
        .collect();
    writer.write_record(&header).map_err(|e| io_err(e.into()))?;
    for row in &table.rows {
        let record: Vec<String> = row.iter().map(csv_field).collect();
        writer.write_record(&record).map_err(|e| io_err(e.into()))?;
    }
    let bytes = writer.into_inner().map_err(|e| io_err(e.into_error()))?;
    write_atomic(path, &bytes).map_err(io_err)?;
    tracing::debug!(path = %path.display(), rows = table.rows.len(), "wrote CSV");
    Ok(())
}

/// Writes the table as an XLSX workbook with one sheet named `sheet_name`.
///
/// The header row is bold and frozen (it stays put while scrolling), an autofilter
/// covers the header and the data, and each column gets its [`Column::width`]. Numbers
/// are stored as numbers ([`Cell::Number`] shown with two decimals, [`Cell::Integer`]
/// as a whole number), dates as Excel dates shown `yyyy-mm-dd`, and [`Cell::Link`] as a
/// clickable hyperlink showing its text (a url Excel refuses, such as one longer than
/// 2,080 characters, is written as plain text instead, with a warning). The file is
/// replaced atomically.
///
/// Errors: [`ExportError::Xlsx`] for an invalid sheet name (empty, longer than 31
/// characters, or containing `[]:*?/\`) or content past Excel's limits;
/// [`ExportError::Io`] when the file cannot be written.
///
/// ```
/// use job_capabilities::export::{Cell, Column, Table, write_xlsx};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut table = Table::new(vec![Column::new("Posting", 40.0)]);
/// table.push_row(vec![Cell::Link {
///     url: "https://example.com/jobs/1".into(),
///     text: "Backend Engineer".into(),
/// }])?;
/// let path = std::env::temp_dir().join(format!("export-xlsx-doc-{}.xlsx", std::process::id()));
/// write_xlsx(&table, &path, "Jobs")?;
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
pub fn write_xlsx(table: &Table, path: &Path, sheet_name: &str) -> Result<(), ExportError> {
    write_xlsx_sheets(&[(sheet_name, table)], path)
}

/// Writes several tables into one workbook, one sheet each, in order, each formatted as
/// [`write_xlsx`] does.
///
/// ```
/// use job_capabilities::export::{Cell, Column, Table, write_xlsx_sheets};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut jobs = Table::new(vec![Column::new("Title", 30.0)]);
/// jobs.push_row(vec![Cell::Text("Backend Engineer".into())])?;
/// let mut companies = Table::new(vec![Column::new("Company", 30.0)]);
/// companies.push_row(vec![Cell::Text("Acme".into())])?;
/// let path = std::env::temp_dir().join(format!("export-sheets-doc-{}.xlsx", std::process::id()));
/// write_xlsx_sheets(&[("Jobs", &jobs), ("Companies", &companies)], &path)?;
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
pub fn write_xlsx_sheets(sheets: &[(&str, &Table)], path: &Path) -> Result<(), ExportError> {
    let mut workbook = Workbook::new();
    for (name, table) in sheets {
        let sheet = workbook.add_worksheet();
        sheet.set_name(*name)?;
        fill_sheet(sheet, table)?;
    }
    let bytes = workbook.save_to_buffer()?;
    write_atomic(path, &bytes).map_err(|source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    tracing::debug!(path = %path.display(), sheets = sheets.len(), "wrote XLSX");
    Ok(())
}

/// The cell formats a sheet uses.
struct Formats {
    header: Format,
    number: Format,
    integer: Format,
    date: Format,
}

impl Formats {
    fn new() -> Self {
        Formats {
            header: Format::new().set_bold(),
            number: Format::new().set_num_format("0.00"),
            integer: Format::new().set_num_format("0"),
            date: Format::new().set_num_format("yyyy-mm-dd"),
        }
    }
}

fn fill_sheet(sheet: &mut Worksheet, table: &Table) -> Result<(), ExportError> {
    let formats = Formats::new();
    for (col, column) in table.columns.iter().enumerate() {
        let col = col_index(col)?;
        sheet.write_string_with_format(0, col, &column.header, &formats.header)?;
        sheet.set_column_width(col, column.width)?;
    }
    for (index, row) in table.rows.iter().enumerate() {
        let row_num = row_index(index + 1)?;
        for (col, cell) in row.iter().enumerate() {
            write_cell(sheet, row_num, col_index(col)?, cell, &formats)?;
        }
    }
    if let Some(last_col) = table.columns.len().checked_sub(1) {
        sheet.set_freeze_panes(1, 0)?;
        sheet.autofilter(0, 0, row_index(table.rows.len())?, col_index(last_col)?)?;
    }
    Ok(())
}

fn write_cell(
    sheet: &mut Worksheet,
    row: u32,
    col: u16,
    cell: &Cell,
    formats: &Formats,
) -> Result<(), ExportError> {
    match cell {
        Cell::Empty => {}
        Cell::Text(text) => {
            sheet.write_string(row, col, text)?;
        }
        Cell::Number(value) if value.is_finite() => {
            sheet.write_number_with_format(row, col, *value, &formats.number)?;
        }
        // Excel has no NaN or infinity: keep what the value was, as text.
        Cell::Number(value) => {
            sheet.write_string(row, col, value.to_string())?;
        }
        // Excel numbers are doubles: integers beyond 2^53 lose their last digits.
        Cell::Integer(value) => {
            sheet.write_number_with_format(row, col, *value as f64, &formats.integer)?;
        }
        Cell::Link { url, text } => {
            match sheet.write_url_with_text(row, col, Url::new(url.as_str()), text) {
                Ok(_) => {}
                Err(err @ (XlsxError::MaxUrlLengthExceeded | XlsxError::UnknownUrlType(_))) => {
                    tracing::warn!(row, col, %err, "hyperlink refused by Excel; writing its text");
                    let shown = if text.is_empty() { url } else { text };
                    sheet.write_string(row, col, shown)?;
                }
                Err(err) => return Err(err.into()),
            }
        }
        Cell::Date(date) => {
            let excel = excel_date(*date)?;
            sheet.write_datetime_with_format(row, col, &excel, &formats.date)?;
        }
    }
    Ok(())
}

fn excel_date(date: NaiveDate) -> Result<ExcelDateTime, ExportError> {
    let year = u16::try_from(date.year())
        .map_err(|_| ExportError::Xlsx(format!("date {date} is outside Excel's range")))?;
    // Month and day always fit in a u8 (1..=12, 1..=31).
    let month = u8::try_from(date.month()).unwrap_or(1);
    let day = u8::try_from(date.day()).unwrap_or(1);
    Ok(ExcelDateTime::from_ymd(year, month, day)?)
}

fn row_index(index: usize) -> Result<u32, ExportError> {
    u32::try_from(index)
        .map_err(|_| ExportError::Xlsx(format!("row {index} is past Excel's limit")))
}

fn col_index(index: usize) -> Result<u16, ExportError> {
    u16::try_from(index)
        .map_err(|_| ExportError::Xlsx(format!("column {index} is past Excel's limit")))
}

fn csv_field(cell: &Cell) -> String {
    match cell {
        Cell::Empty => String::new(),
        Cell::Text(text) => guard_formula(text),
        Cell::Number(value) => value.to_string(),
        Cell::Integer(value) => value.to_string(),
        Cell::Link { url, .. } => guard_formula(url),
        Cell::Date(date) => date.format("%Y-%m-%d").to_string(),
    }
}

/// Prefixes text a spreadsheet would run as a formula with an apostrophe.
fn guard_formula(text: &str) -> String {
    match text.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{text}"),
        _ => text.to_owned(),
    }
}

/// Writes `bytes` to `path` atomically: to a temporary file in the same directory
/// (flushed to disk), then renamed over `path`. The temporary file is removed on
/// failure.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let file_name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the destination has no file name",
        )
    })?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(
        ".{}.{}-{}.tmp",
        file_name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        // Best effort: the temporary file may not exist if creating it failed.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
