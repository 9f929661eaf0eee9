//! Tables written as CSV and XLSX, read back with `csv` and `calamine`.
#![cfg(test)]

use std::io::Read;
use std::path::Path;

use calamine::{Data, Reader, Xlsx, open_workbook};
use chrono::NaiveDate;
use job_capabilities::export::{Cell, Column, ExportError, Table, write_csv, write_xlsx};

fn date() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 3, 14).unwrap()
}

/// A table with every cell kind, a formula-like text, a short row and an empty row.
fn sample_table() -> Table {
    let mut table = Table::new(vec![
        Column::new("Company", 24.0),
        Column::new("Posting", 40.0),
        Column::new("Salary", 12.0),
        Column::new("Openings", 10.0),
        Column::new("Posted", 12.0),
        Column::new("Notes", 30.0),
    ]);
    table
        .push_row(vec![
            Cell::from("Acme, Inc."),
            Cell::Link {
                url: "https://example.com/jobs/1?ref=a&b=c".into(),
                text: "Backend Engineer".into(),
            },
            Cell::Number(120_000.5),
            Cell::Integer(3),
            Cell::Date(date()),
            Cell::from("=SUM(A1:A2)"),
        ])
        .unwrap();
    table
        .push_row(vec![
            Cell::from("Beta \"quoted\"\nmultiline"),
            Cell::Link {
                url: "https://example.org/p/2".into(),
                text: "Data Analyst".into(),
            },
            Cell::Number(95_000.0),
            Cell::Integer(-7),
            Cell::Empty,
            Cell::from("-1 plus @ and +"),
        ])
        .unwrap();
    // Shorter than the columns: padded with empty cells.
    table
        .push_row(vec![Cell::from("Gamma"), Cell::Empty, Cell::Number(0.1)])
        .unwrap();
    table
}

#[test]
fn push_row_pads_short_rows_and_refuses_long_ones() {
    let mut table = Table::new(vec![Column::new("A", 8.0), Column::new("B", 8.0)]);
    table.push_row(vec![]).unwrap();
    assert_eq!(table.rows[0], vec![Cell::Empty, Cell::Empty]);
    let err = table
        .push_row(vec![Cell::Integer(1), Cell::Integer(2), Cell::Integer(3)])
        .unwrap_err();
    assert!(
        matches!(
            err,
            ExportError::RowTooLong {
                row: 1,
                cells: 3,
                columns: 2
            }
        ),
        "{err:?}"
    );
    assert_eq!(table.rows.len(), 1, "a refused row is not appended");
    assert_eq!(
        err.to_string(),
        "row 1 has 3 cells but the table has 2 columns"
    );
}

#[test]
fn cell_conversions() {
    assert_eq!(Cell::from("a"), Cell::Text("a".into()));
    assert_eq!(Cell::from(String::from("b")), Cell::Text("b".into()));
    assert_eq!(Cell::from(1.5), Cell::Number(1.5));
    assert_eq!(Cell::from(7_i64), Cell::Integer(7));
    assert_eq!(Cell::from(date()), Cell::Date(date()));
    assert_eq!(Cell::from(None::<i64>), Cell::Empty);
    assert_eq!(Cell::from(Some(2.0)), Cell::Number(2.0));
}

#[test]
fn csv_round_trips_every_cell_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.csv");
    write_csv(&sample_table(), &path).unwrap();

    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(&path)
        .unwrap();
    let records: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect();
    let expected: Vec<Vec<&str>> = vec![
        vec![
            "Company", "Posting", "Salary", "Openings", "Posted", "Notes",
        ],
        vec![
            "Acme, Inc.",
            "https://example.com/jobs/1?ref=a&b=c",
            "120000.5",
            "3",
            "2025-03-14",
            "'=SUM(A1:A2)",
        ],
        vec![
            "Beta \"quoted\"\nmultiline",
            "https://example.org/p/2",
            "95000",
            "-7",
            "",
            "'-1 plus @ and +",
        ],
        vec!["Gamma", "", "0.1", "", "", ""],
    ];
    assert_eq!(records, expected);
    // Nothing but the file itself is left in the directory (no temporary file).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn csv_guards_every_formula_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.csv");
    let mut table = Table::new(vec![Column::new("x", 8.0)]);
    for text in ["=1+1", "+1", "-1", "@SUM(1)", "\tx", "safe", "a=b", ""] {
        table.push_row(vec![Cell::from(text)]).unwrap();
    }
    write_csv(&table, &path).unwrap();
    let mut reader = csv::Reader::from_path(&path).unwrap();
    let cells: Vec<String> = reader.records().map(|r| r.unwrap()[0].to_owned()).collect();
    assert_eq!(
        cells,
        ["'=1+1", "'+1", "'-1", "'@SUM(1)", "'\tx", "safe", "a=b", ""]
    );
}

#[test]
fn csv_replaces_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.csv");
    std::fs::write(
        &path,
        "old content that is longer than the new one\n".repeat(10),
    )
    .unwrap();
    let table = Table::new(vec![Column::new("only", 8.0)]);
    write_csv(&table, &path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "only\n");
}

#[test]
fn csv_into_a_missing_directory_is_an_io_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("out.csv");
    let err = write_csv(&sample_table(), &path).unwrap_err();
    match &err {
        ExportError::Io { path: p, .. } => assert_eq!(p, &path),
        other => panic!("expected Io, got {other:?}"),
    }
    assert!(err.to_string().contains("out.csv"), "{err}");
}

/// The text of one file inside the XLSX (a zip archive).
fn zip_entry(path: &Path, name: &str) -> String {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut entry = archive.by_name(name).unwrap();
    let mut text = String::new();
    entry.read_to_string(&mut text).unwrap();
    text
}

#[test]
fn xlsx_has_typed_cells_frozen_header_filter_and_links() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.xlsx");
    write_xlsx(&sample_table(), &path, "Jobs").unwrap();

    let mut workbook: Xlsx<_> = open_workbook(&path).unwrap();
    assert_eq!(workbook.sheet_names(), vec!["Jobs".to_owned()]);
    let range = workbook.worksheet_range("Jobs").unwrap();
    assert_eq!(range.height(), 4, "header + 3 rows");
    assert_eq!(range.width(), 6);

    let header: Vec<String> = range
        .rows()
        .next()
        .unwrap()
        .iter()
        .map(|c| c.to_string())
        .collect();
    assert_eq!(
        header,
        [
            "Company", "Posting", "Salary", "Openings", "Posted", "Notes"
        ]
    );

    assert_eq!(range.get((1, 0)), Some(&Data::String("Acme, Inc.".into())));
    assert_eq!(
        range.get((1, 1)),
        Some(&Data::String("Backend Engineer".into()))
    );
    assert_eq!(range.get((1, 2)), Some(&Data::Float(120_000.5)));
    assert_eq!(range.get((1, 3)), Some(&Data::Float(3.0)));
    match range.get((1, 4)) {
        Some(Data::DateTime(dt)) => {
            // Excel's serial day number for 2025-03-14.
            assert_eq!(dt.as_f64(), 45730.0);
            assert!(dt.is_datetime());
        }
        other => panic!("expected a date, got {other:?}"),
    }
    // XLSX cells are typed: no formula guard, the text is kept as is.
    assert_eq!(range.get((1, 5)), Some(&Data::String("=SUM(A1:A2)".into())));
    assert_eq!(range.get((2, 2)), Some(&Data::Float(95_000.0)));
    assert_eq!(range.get((2, 3)), Some(&Data::Float(-7.0)));
    assert_eq!(range.get((2, 4)), Some(&Data::Empty));
    assert_eq!(range.get((3, 2)), Some(&Data::Float(0.1)));

    let sheet = zip_entry(&path, "xl/worksheets/sheet1.xml");
    let pane = sheet
        .find("<pane")
        .map(|i| &sheet[i..i + sheet[i..].find("/>").unwrap()])
        .expect("a frozen pane");
    assert!(pane.contains(r#"ySplit="1""#), "{pane}");
    assert!(pane.contains(r#"state="frozen""#), "{pane}");
    assert!(!pane.contains("xSplit"), "{pane}");
    assert!(sheet.contains(r#"<autoFilter ref="A1:F4""#), "{sheet}");
    assert_eq!(sheet.matches("<hyperlink ").count(), 2, "{sheet}");
    assert!(
        sheet.contains(r#"<col min="2" max="2" width="40.7109375""#),
        "{sheet}"
    );

    let rels = zip_entry(&path, "xl/worksheets/_rels/sheet1.xml.rels");
    assert!(
        rels.contains("https://example.com/jobs/1?ref=a&amp;b=c"),
        "{rels}"
    );
    assert!(rels.contains("https://example.org/p/2"), "{rels}");

    let styles = zip_entry(&path, "xl/styles.xml");
    assert!(styles.contains(r#"formatCode="0.00""#), "{styles}");
    assert!(styles.contains(r#"formatCode="yyyy-mm-dd""#), "{styles}");
    assert!(
        styles.contains("<b/>"),
        "a bold font for the header: {styles}"
    );
}

#[test]
fn xlsx_with_no_rows_still_has_header_and_filter() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.xlsx");
    let table = Table::new(vec![Column::new("A", 10.0), Column::new("B", 10.0)]);
    write_xlsx(&table, &path, "Empty").unwrap();
    let mut workbook: Xlsx<_> = open_workbook(&path).unwrap();
    let range = workbook.worksheet_range("Empty").unwrap();
    assert_eq!(range.height(), 1);
    let sheet = zip_entry(&path, "xl/worksheets/sheet1.xml");
    assert!(sheet.contains(r#"<autoFilter ref="A1:B1""#), "{sheet}");
}

#[test]
fn xlsx_refuses_an_invalid_sheet_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.xlsx");
    let err = write_xlsx(&sample_table(), &path, "bad/name").unwrap_err();
    assert!(matches!(err, ExportError::Xlsx(_)), "{err:?}");
    assert!(!path.exists(), "nothing is written on error");
}

#[test]
fn xlsx_writes_an_overlong_link_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.xlsx");
    let mut table = Table::new(vec![Column::new("Link", 20.0)]);
    let url = format!("https://example.com/?q={}", "x".repeat(3000));
    table
        .push_row(vec![Cell::Link {
            url,
            text: "Too long".into(),
        }])
        .unwrap();
    write_xlsx(&table, &path, "Links").unwrap();
    let mut workbook: Xlsx<_> = open_workbook(&path).unwrap();
    let range = workbook.worksheet_range("Links").unwrap();
    assert_eq!(range.get((1, 0)), Some(&Data::String("Too long".into())));
    assert!(!zip_entry(&path, "xl/worksheets/sheet1.xml").contains("<hyperlink "));
}
