//! Hand-written SVG charts (no plotting dependency): horizontal bars with 95% whiskers, and
//! log–log lines for the sweeps.

use std::fmt::Write as _;

use crate::util::fmt_ns;

/// One bar: a label, a time per operation and its interval (ns).
#[derive(Debug, Clone)]
pub struct Bar {
    /// Label on the left.
    pub label: String,
    /// Median time per operation.
    pub value: f64,
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// Fill colour.
    pub color: &'static str,
}

/// Colours by role.
pub const RAW: &str = "#7f7f7f";
/// Middleware colour.
pub const MIDDLEWARE: &str = "#1f77b4";
/// SQLx colour.
pub const SQLX: &str = "#ff7f0e";
/// Colour of the other async libraries (the async-SQLite peers).
pub const PEER: &str = "#2ca02c";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "")
}

/// A horizontal bar chart of time per operation (linear axis from 0).
pub fn bar_chart(title: &str, bars: &[Bar]) -> String {
    let (label_w, plot_w, row_h, top, bottom) = (260.0, 460.0, 34.0, 44.0, 40.0);
    let width = label_w + plot_w + 110.0;
    let height = top + bottom + row_h * bars.len().max(1) as f64;
    let max = bars
        .iter()
        .map(|b| b.hi.max(b.value))
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let scale = nice_ceiling(max);
    let x = |v: f64| label_w + plot_w * (v / scale).clamp(0.0, 1.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" font-weight="bold" text-anchor="middle">{}</text>"#,
        width / 2.0,
        esc(title)
    );
    // Grid and axis labels.
    for i in 0..=4 {
        let v = scale * f64::from(i) / 4.0;
        let gx = x(v);
        let _ = writeln!(
            s,
            r##"<line x1="{gx:.1}" y1="{top}" x2="{gx:.1}" y2="{:.1}" stroke="#ddd"/>"##,
            height - bottom
        );
        let _ = writeln!(
            s,
            r##"<text x="{gx:.1}" y="{:.1}" text-anchor="middle" fill="#444">{}</text>"##,
            height - bottom + 16.0,
            if i == 0 { "0".to_string() } else { fmt_ns(v) }
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444">median time per operation (whiskers: 95% interval)</text>"##,
        label_w + plot_w / 2.0,
        height - 6.0
    );
    for (i, b) in bars.iter().enumerate() {
        let y = top + row_h * i as f64;
        let cy = y + row_h / 2.0;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" dominant-baseline="middle">{}</text>"#,
            label_w - 8.0,
            cy,
            esc(&b.label)
        );
        let _ = writeln!(
            s,
            r#"<rect x="{label_w}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
            y + 6.0,
            (x(b.value) - label_w).max(0.5),
            row_h - 12.0,
            b.color
        );
        let (x0, x1) = (x(b.lo), x(b.hi));
        let _ = writeln!(
            s,
            r#"<path d="M{x0:.1},{cy:.1}H{x1:.1}M{x0:.1},{:.1}V{:.1}M{x1:.1},{:.1}V{:.1}" stroke="black" fill="none"/>"#,
            cy - 6.0,
            cy + 6.0,
            cy - 6.0,
            cy + 6.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{cy:.1}" dominant-baseline="middle">{}</text>"#,
            x(b.hi.max(b.value)) + 6.0,
            fmt_ns(b.value)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// One series of a line chart: points (parameter, ns per operation).
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend.
    pub label: String,
    /// Points, ascending parameter.
    pub points: Vec<(f64, f64)>,
    /// Colour.
    pub color: &'static str,
}

/// A log–log line chart of time per operation against a parameter.
pub fn line_chart(title: &str, x_label: &str, series: &[Series]) -> String {
    let (left, right, top, bottom, w, h) = (80.0, 150.0, 44.0, 50.0, 480.0, 300.0);
    let width = left + w + right;
    let height = top + h + bottom;
    let pts = series.iter().flat_map(|s| s.points.iter().copied());
    let (mut xmin, mut xmax, mut ymin, mut ymax) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (px, py) in pts {
        if px > 0.0 && py > 0.0 {
            xmin = xmin.min(px);
            xmax = xmax.max(px);
            ymin = ymin.min(py);
            ymax = ymax.max(py);
        }
    }
    if xmin > xmax {
        (xmin, xmax, ymin, ymax) = (1.0, 10.0, 1.0, 10.0);
    }
    let (lx0, lx1) = (xmin.log10(), xmax.log10().max(xmin.log10() + 1e-9));
    let (ly0, ly1) = (
        ymin.log10().floor(),
        ymax.log10().ceil().max(ymin.log10().floor() + 1.0),
    );
    let px = |v: f64| left + w * (v.log10() - lx0) / (lx1 - lx0);
    let py = |v: f64| top + h - h * (v.log10() - ly0) / (ly1 - ly0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" font-weight="bold" text-anchor="middle">{}</text>"#,
        left + w / 2.0,
        esc(title)
    );
    // Y grid: every decade, and 2× / 5× within it.
    let mut decade = ly0 as i32;
    while f64::from(decade) <= ly1 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(decade);
            if v.log10() < ly0 - 1e-9 || v.log10() > ly1 + 1e-9 {
                continue;
            }
            let y = py(v);
            let _ = writeln!(
                s,
                r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e3e3e3"/>"##,
                left + w
            );
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{y:.1}" text-anchor="end" dominant-baseline="middle" fill="#444">{}</text>"##,
                left - 6.0,
                fmt_ns(v)
            );
        }
        decade += 1;
    }
    // X ticks at the data's parameters.
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for v in xs {
        let x = px(v);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#e3e3e3"/>"##,
            top + h
        );
        let _ = writeln!(
            s,
            r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#444">{}</text>"##,
            top + h + 16.0,
            fmt_param(v)
        );
    }
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#888"/>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#444">{} (log scale)</text>"##,
        left + w / 2.0,
        height - 10.0,
        esc(x_label)
    );
    let _ = writeln!(
        s,
        r##"<text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle" fill="#444">median time per operation (log scale)</text>"##,
        top + h / 2.0
    );
    for (i, se) in series.iter().enumerate() {
        let path: Vec<String> = se
            .points
            .iter()
            .filter(|p| p.0 > 0.0 && p.1 > 0.0)
            .enumerate()
            .map(|(j, &(a, b))| {
                format!(
                    "{}{:.1},{:.1}",
                    if j == 0 { "M" } else { "L" },
                    px(a),
                    py(b)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            r#"<path d="{}" stroke="{}" stroke-width="2" fill="none"/>"#,
            path.join(""),
            se.color
        );
        for &(a, b) in se.points.iter().filter(|p| p.0 > 0.0 && p.1 > 0.0) {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{}"/>"#,
                px(a),
                py(b),
                se.color
            );
        }
        let ly = top + 10.0 + 20.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{}" stroke-width="2"/><text x="{:.1}" y="{ly:.1}" dominant-baseline="middle">{}</text>"#,
            left + w + 12.0,
            left + w + 32.0,
            se.color,
            left + w + 38.0,
            esc(&se.label)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// 1000 → "1k", 65536 → "64Ki", 16 → "16".
pub fn fmt_param(v: f64) -> String {
    let n = v as u64;
    if n >= 1024 && n.is_multiple_of(1024) && !n.is_multiple_of(1000) {
        format!("{}Ki", n / 1024)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

/// The smallest of 1, 2, 2.5, 5 × 10^k at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_scale() {
        assert_eq!(fmt_param(1000.0), "1k");
        assert_eq!(fmt_param(65536.0), "64Ki");
        assert_eq!(fmt_param(16.0), "16");
        assert_eq!(nice_ceiling(3.7e3), 5e3);
        assert_eq!(nice_ceiling(1e3), 1e3);
    }

    #[test]
    fn charts_are_svg() {
        let b = bar_chart(
            "t",
            &[Bar {
                label: "a<b".into(),
                value: 2.0,
                lo: 1.5,
                hi: 2.5,
                color: RAW,
            }],
        );
        assert!(b.starts_with("<svg") && b.contains("a&lt;b") && b.ends_with("</svg>\n"));
        let l = line_chart(
            "t",
            "x",
            &[Series {
                label: "s".into(),
                points: vec![(1.0, 10.0), (10.0, 100.0)],
                color: SQLX,
            }],
        );
        assert!(l.contains("<path d=\"M"));
    }
}
