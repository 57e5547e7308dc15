//! CSV cells a spreadsheet cannot run: any cells written with `write_csv_record` (after the header, as in an
//! export) read back with the `csv` crate as the neutralised cells, every record in its own row; a neutralised
//! cell is the cell, or `'` and the cell exactly when a spreadsheet could read the cell as a formula (a formula
//! character first, half- or full-width, perhaps after spaces); and no cell read back could.
#![no_main]
use domain::audit_export::{CSV_COLUMNS, neutralise, reads_as_formula, write_csv_header, write_csv_record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|records: Vec<Vec<Option<&str>>>| {
    let mut out = Vec::new();
    write_csv_header(&mut out);
    for cells in &records {
        write_csv_record(&mut out, cells);
    }
    assert!(out.ends_with(b"\r\n"));

    let mut expected: Vec<Vec<String>> = vec![CSV_COLUMNS.iter().map(|c| c.to_string()).collect()];
    for cells in &records {
        let mut row = Vec::new();
        for cell in cells {
            let Some(cell) = cell else {
                row.push(String::new());
                continue;
            };
            let safe = neutralise(cell);
            if reads_as_formula(cell) {
                assert_eq!(safe, format!("'{cell}"));
            } else {
                assert_eq!(safe, *cell);
            }
            row.push(safe.into_owned());
        }
        // A record of no cells or of one empty cell is an empty line, which CSV readers skip. (Exports always
        // write 15 cells.)
        if row.iter().map(String::len).sum::<usize>() > 0 || row.len() > 1 {
            expected.push(row);
        }
    }

    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(&out[..]);
    let read: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.expect("the CSV reads back").iter().map(str::to_string).collect())
        .collect();
    assert_eq!(read, expected, "the cells read back as written, neutralised");
    for cell in read.iter().skip(1).flatten() {
        assert!(!reads_as_formula(cell), "a cell read back starts with a formula character: {cell:?}");
    }
});
