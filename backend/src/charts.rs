//! The review page's charts, drawn on the server as SVG with plotters: readable without JavaScript, served as
//! images next to the numbers they show (the table on the page is their text alternative).
use domain::indicators::{Counts, Indicator, Period, PeriodKind};
use plotters::prelude::*;
use words::i18n::Locale;
use words::indicator_label_in;

/// Which chart: the rates (%), the counts per period, or the approval latency (minutes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    Rates,
    Counts,
    Latency,
}

impl Chart {
    pub fn parse(text: &str) -> Option<Chart> {
        match text {
            "rates" => Some(Chart::Rates),
            "counts" => Some(Chart::Counts),
            "latency" => Some(Chart::Latency),
            _ => None,
        }
    }

    fn indicators(self) -> &'static [Indicator] {
        match self {
            Chart::Rates => &[Indicator::OutsideApiErrorRate, Indicator::DoubleSendRatio, Indicator::RerunErrorRate],
            Chart::Counts => &[
                Indicator::Stalled,
                Indicator::DoubleSendFlags,
                Indicator::MissingProcessId,
                Indicator::IdempotencyCollisions,
            ],
            Chart::Latency => &[Indicator::ApprovalLatencyMedian, Indicator::ApprovalLatencyP90],
        }
    }
}

const SIZE: (u32, u32) = (760, 300);
// Colour-blind safe (Okabe–Ito); the legend also names each series.
const COLOURS: [RGBColor; 4] =
    [RGBColor(0, 114, 178), RGBColor(213, 94, 0), RGBColor(0, 158, 115), RGBColor(204, 121, 167)];

/// The chart of `trend` (oldest period first) as an SVG document. Counts are bars for stalls and lines for the
/// rest; rates and latencies are lines, with a gap-free line through the periods that have a value.
pub fn draw(chart: Chart, trend: &[(Period, Counts)], locale: Locale) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let series: Vec<(Indicator, Vec<(usize, f64)>)> = chart
            .indicators()
            .iter()
            .map(|&i| (i, trend.iter().enumerate().filter_map(|(x, (_, c))| c.value(i).map(|v| (x, v))).collect()))
            .collect();
        let highest = series.iter().flat_map(|(_, points)| points.iter().map(|p| p.1)).fold(0.0, f64::max);
        let top = nice_top(highest, chart);
        let labels: Vec<String> = trend.iter().map(|(p, _)| axis_label(*p)).collect();
        let unit = match chart {
            Chart::Rates => "%",
            Chart::Latency => unit_minutes(locale),
            Chart::Counts => "",
        };
        let last = trend.len().saturating_sub(1);
        let mut plot = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(28)
            .y_label_area_size(48)
            .build_cartesian_2d(-0.5f64..last as f64 + 0.5, 0f64..top)
            .map_err(|e| e.to_string())?;
        plot.configure_mesh()
            .disable_x_mesh()
            .x_labels(trend.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 0.01 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|y| if top >= 10.0 { format!("{y:.0}") } else { format!("{y:.1}") })
            .light_line_style(TRANSPARENT)
            .y_desc(unit)
            .label_style(("sans-serif", 12))
            .draw()
            .map_err(|e| e.to_string())?;
        for (n, (indicator, points)) in series.iter().enumerate() {
            let colour = COLOURS[n % COLOURS.len()];
            let name = indicator_label_in(locale, *indicator);
            if chart == Chart::Counts && *indicator == Indicator::Stalled {
                let bars = points.iter().map(|&(x, v)| {
                    Rectangle::new([(x as f64 - 0.35, 0.0), (x as f64 + 0.35, v)], colour.mix(0.45).filled())
                });
                plot.draw_series(bars)
                    .map_err(|e| e.to_string())?
                    .label(name)
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], colour.mix(0.45).filled()));
                continue;
            }
            let line = points.iter().map(|&(x, v)| (x as f64, v));
            plot.draw_series(LineSeries::new(line, colour.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2)));
            plot.draw_series(points.iter().map(|&(x, v)| Circle::new((x as f64, v), 3, colour.filled())))
                .map_err(|e| e.to_string())?;
        }
        plot.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// A round top for the y axis with room above the highest value for the legend (and an axis when all are 0).
fn nice_top(highest: f64, chart: Chart) -> f64 {
    let floor = if chart == Chart::Rates { 1.0 } else { 5.0 };
    let room = (highest * 1.6).max(floor);
    let step = 10f64.powf(room.log10().floor());
    (room / step).ceil() * step
}

fn axis_label(period: Period) -> String {
    match period.kind {
        PeriodKind::Week => period.start.format("%m/%d").to_string(),
        PeriodKind::Month => period.start.format("%Y-%m").to_string(),
    }
}

fn unit_minutes(locale: Locale) -> &'static str {
    words::i18n::td_string!(locale, review.unit.minutes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn trend() -> Vec<(Period, Counts)> {
        let end = Period::containing(PeriodKind::Week, NaiveDate::from_ymd_opt(2026, 11, 30).unwrap());
        end.trend(4)
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let mut counts = Counts {
                    sends: 100,
                    double_sends: i as i64,
                    reruns_ended: 4,
                    reruns_failed: 1,
                    ..Counts::default()
                };
                counts.stalled_by_event.insert("timeout".into(), 3 * i as i64);
                (p, counts)
            })
            .collect()
    }

    #[test]
    fn each_chart_is_an_svg_with_its_legend_in_the_readers_language_and_the_period_labels() {
        let rates = draw(Chart::Rates, &trend(), Locale::en).unwrap();
        assert!(rates.starts_with("<svg") && rates.trim_end().ends_with("</svg>"), "{rates}");
        assert!(rates.contains("Rerun error rate") && rates.contains("11/30") && rates.contains("11/09"), "{rates}");
        let counts = draw(Chart::Counts, &trend(), Locale::ja).unwrap();
        assert!(counts.contains("停止") && counts.contains("<rect"), "{counts}");
        let latency = draw(Chart::Latency, &trend(), Locale::en).unwrap();
        assert!(latency.contains("<svg"), "no decisions still draws the axes");
    }

    #[test]
    fn the_y_axis_ends_at_a_round_number_above_the_highest_value() {
        assert_eq!(nice_top(0.0, Chart::Rates), 1.0);
        assert_eq!(nice_top(0.0, Chart::Counts), 5.0);
        assert_eq!(nice_top(7.5, Chart::Rates), 20.0);
        assert_eq!(nice_top(83.0, Chart::Counts), 200.0);
        assert_eq!(nice_top(4.0, Chart::Counts), 7.0);
    }
}
