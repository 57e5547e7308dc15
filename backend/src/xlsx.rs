//! The decision table as an Excel workbook (rust_xlsxwriter), in the reader's language: filled in, or blank
//! (the ten events only) for a team to write its own rows.
use contract::AppError;
use domain::audit_export::reads_as_formula;
use domain::stall::StallEvent;
use rust_xlsxwriter::{Format, FormatAlign, Workbook};
use words::decision_table::{headings, row_texts};
use words::i18n::{Locale, td_string};

pub fn decision_table(l: Locale, blank: bool) -> Result<Vec<u8>, AppError> {
    let failed = |e: rust_xlsxwriter::XlsxError| AppError::internal("decision table workbook", e);
    let mut workbook = Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.set_name(td_string!(l, operation.decision_table.sheet)).map_err(failed)?;
    let heading = Format::new().set_bold().set_background_color("#E8EEFB").set_text_wrap();
    let cell = Format::new().set_text_wrap().set_align(FormatAlign::Top);
    // A text a spreadsheet could read as a formula is marked as text (the quote prefix), as the CSV exports do.
    let quoted = cell.clone().set_quote_prefix();
    for (column, (title, width)) in headings(l).iter().zip([18.0, 24.0, 36.0, 24.0, 30.0, 28.0]).enumerate() {
        sheet.write_string_with_format(0, column as u16, *title, &heading).map_err(failed)?;
        sheet.set_column_width(column as u16, width).map_err(failed)?;
    }
    for (i, event) in StallEvent::ALL.iter().enumerate() {
        let texts = row_texts(l, *event);
        let shown = if blank { &texts[..1] } else { &texts[..] };
        for (column, text) in shown.iter().enumerate() {
            let format = if reads_as_formula(text) { &quoted } else { &cell };
            sheet.write_string_with_format(i as u32 + 1, column as u16, text, format).map_err(failed)?;
        }
    }
    sheet.set_freeze_panes(1, 1).map_err(failed)?;
    workbook.save_to_buffer().map_err(failed)
}
