//! The screenshots of `docs/screenshots/` (shown in the README): the packs, a pack's memory
//! list, the sync page with a conflict, the graph's picture and a pack's activity, on a desktop
//! (1280×900) and a phone (390×844), in English and Chinese, taken in headless chromium over
//! WebDriver (`webdriver.rs`) from the real binary. Taken only when asked:
//!
//! ```sh
//! ENGRAM_UI_SCREENSHOTS=$PWD/docs/screenshots cargo test --test it -- browser_screenshots --include-ignored
//! ```

use serde_json::json;

use crate::browser_pages::{open, runtime};
use crate::browser_sync::two_devices_in_conflict;
use crate::common::*;
use crate::ui::UiServer;
use crate::webdriver::Browser;

/// The screens: name, width, height.
const SCREENS: [(&str, u32, u32); 2] = [("desktop", 1280, 900), ("phone", 390, 844)];

#[test]
#[ignore = "writes docs/screenshots/: ENGRAM_UI_SCREENSHOTS=<dir>"]
fn screenshots_of_the_page() {
    let Some(out) = std::env::var_os("ENGRAM_UI_SCREENSHOTS") else {
        panic!("ENGRAM_UI_SCREENSHOTS=<dir> names where the screenshots go");
    };
    let Some(b) = Browser::start() else { panic!("no chromium and chromedriver to take them with") };
    let out = std::path::PathBuf::from(out);
    std::fs::create_dir_all(&out).expect("screenshot dir");
    // The desktop of two devices that changed the same memories while apart: the sync page
    // holds their conflicts.
    let remote = tempfile::tempdir().expect("tempdir");
    let (_laptop, mut env) = two_devices_in_conflict(&remote.path().join("coach.git"));
    env.now = Some("2026-11-22T10:03:00Z".to_owned());
    env.init("work");
    runtime().block_on(async {
        let c = env.client_with(&["--tools", "graph"]).await;
        ok(
            &c,
            "create_entities",
            json!({"entities": [
                {"name": "Alice", "entityType": "person", "observations": ["leads the mobile team"]},
                {"name": "engram", "entityType": "project", "observations": ["git-native memory", "written in Rust"]},
                {"name": "Bob", "entityType": "person", "observations": ["reviews pull requests"]},
                {"name": "发布计划", "entityType": "plan", "observations": ["12 月 15 日发布"]},
                {"name": "Berlin", "entityType": "place", "observations": ["the team's office"]}
            ]}),
        )
        .await;
        ok(
            &c,
            "create_relations",
            json!({"relations": [
                {"from": "Alice", "to": "engram", "relationType": "leads"},
                {"from": "Bob", "to": "engram", "relationType": "reviews"},
                {"from": "engram", "to": "发布计划", "relationType": "follows"},
                {"from": "Alice", "to": "Berlin", "relationType": "works in"},
                {"from": "Bob", "to": "Alice", "relationType": "reports to"}
            ]}),
        )
        .await;
    });
    let ui = UiServer::start(&env);
    for (category, ty, summary, content) in [
        (
            "preferences",
            "preference",
            "prefers green tea",
            "The user prefers green tea in the afternoon, no sugar.",
        ),
        (
            "projects",
            "decision",
            "use PostgreSQL for the API",
            "We chose PostgreSQL over MySQL: JSONB and better migrations.",
        ),
        ("projects", "fact", "发布日期是 12 月 15 日", "新版本计划在 12 月 15 日发布，发布前一周冻结代码。"),
        ("preferences", "preference", "Prefers green tea!", "Green tea after lunch, never with sugar."),
    ] {
        let (status, v) = ui.api(
            "POST",
            "/api/packs/coach/memories",
            Some(json!({"category": category, "summary": summary, "content": content, "type": ty})),
        );
        assert_eq!(status, 201, "{v}");
    }
    let base = open(&b, &ui);
    for (screen, width, height) in SCREENS {
        viewport(&b, width, height);
        for lang in ["en", "zh"] {
            for (name, path) in [
                ("home", "/?"),
                ("memory", "/p/coach/memory?"),
                ("sync", "/sync?"),
                ("graph", "/graph?"),
                ("activity", "/p/coach/activity?"),
            ] {
                b.goto(&format!("{base}{path}lang={lang}"));
                b.find("main");
                // The merge a likely duplicate offers, unfolded.
                b.eval("document.querySelector('details.merge')?.setAttribute('open', '');");
                let file = out.join(format!("{name}-{screen}-{lang}.png"));
                b.screenshot(&file);
                let png = std::fs::read(&file).expect("the screenshot");
                std::fs::write(&file, with_a_palette(&png)).expect("write the screenshot");
            }
        }
    }
}

/// Sizes the window so that the page itself (the screenshot) is `width`×`height`.
fn viewport(b: &Browser, width: u32, height: u32) {
    b.set_size(width, height);
    let inner = b.eval("return [window.innerWidth, window.innerHeight];");
    let got = |i: usize| inner[i].as_u64().and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
    b.set_size(2 * width - got(0).min(width), 2 * height - got(1).min(height));
}

/// The screenshot in 256 colours (its most frequent ones, every other pixel the nearest of
/// them): a page is flat colours and anti-aliased text, a third of the bytes of chromium's
/// 8-bit RGBA. A PNG chromium did not write as expected comes back as it was.
fn with_a_palette(png: &[u8]) -> Vec<u8> {
    use std::collections::HashMap;
    use std::io::Write as _;
    let Some((width, height, channels, data)) = decoded(png) else { return png.to_vec() };
    let pixel =
        |i: usize| -> [u8; 3] { [data[i * channels], data[i * channels + 1], data[i * channels + 2]] };
    let pixels = width * height;
    let mut counts: HashMap<[u8; 3], usize> = HashMap::new();
    for i in 0..pixels {
        *counts.entry(pixel(i)).or_default() += 1;
    }
    let mut by_count: Vec<([u8; 3], usize)> = counts.into_iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let palette: Vec<[u8; 3]> = by_count.iter().take(256).map(|(c, _)| *c).collect();
    let mut index: HashMap<[u8; 3], u8> = HashMap::new();
    let mut nearest = |c: [u8; 3]| -> u8 {
        *index.entry(c).or_insert_with(|| {
            let distance = |p: &[u8; 3]| -> i32 {
                p.iter().zip(c).map(|(&a, b)| (i32::from(a) - i32::from(b)).pow(2)).sum()
            };
            (0..palette.len()).min_by_key(|&k| distance(&palette[k])).map_or(0, |k| k as u8)
        })
    };
    let mut rows = Vec::with_capacity(pixels + height);
    for y in 0..height {
        rows.push(0); // no filter
        for x in 0..width {
            rows.push(nearest(pixel(y * width + x)));
        }
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&rows).expect("deflate");
    let idat = z.finish().expect("deflate");
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], body: &[u8]| {
        out.extend((body.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(body);
        out.extend(kind);
        out.extend(body);
        out.extend(crc.sum().to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend((width as u32).to_be_bytes());
    ihdr.extend((height as u32).to_be_bytes());
    ihdr.extend([8, 3, 0, 0, 0]); // 8 bits, indexed colour, deflate, adaptive filters, no interlace
    chunk(b"IHDR", &ihdr);
    chunk(b"PLTE", &palette.concat());
    chunk(b"IDAT", &idat);
    chunk(b"IEND", &[]);
    out
}

/// An 8-bit RGB or RGBA PNG without interlacing: (width, height, channels, pixels unfiltered).
fn decoded(png: &[u8]) -> Option<(usize, usize, usize, Vec<u8>)> {
    use std::io::Read as _;
    let mut at = 8;
    let (mut width, mut height, mut channels) = (0, 0, 0);
    let mut idat = Vec::new();
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().ok()?) as usize;
        let kind = &png[at + 4..at + 8];
        let body = png.get(at + 8..at + 8 + len)?;
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(body[0..4].try_into().ok()?) as usize;
                height = u32::from_be_bytes(body[4..8].try_into().ok()?) as usize;
                channels = match (body[8], body[9], body[12]) {
                    (8, 2, 0) => 3,
                    (8, 6, 0) => 4,
                    _ => return None,
                };
            }
            b"IDAT" => idat.extend_from_slice(body),
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..]).read_to_end(&mut raw).ok()?;
    let stride = width * channels;
    if channels == 0 || raw.len() != height * (stride + 1) {
        return None;
    }
    let mut data = vec![0u8; height * stride];
    for y in 0..height {
        let filter = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for x in 0..stride {
            let a = if x >= channels { data[y * stride + x - channels] } else { 0 };
            let b = if y > 0 { data[(y - 1) * stride + x] } else { 0 };
            let c = if x >= channels && y > 0 { data[(y - 1) * stride + x - channels] } else { 0 };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) =
                        ((p - i16::from(a)).abs(), (p - i16::from(b)).abs(), (p - i16::from(c)).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                _ => return None,
            };
            data[y * stride + x] = line[x].wrapping_add(predicted);
        }
    }
    Some((width, height, channels, data))
}
