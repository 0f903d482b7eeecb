//! The loopback server of `train --live`: the built page (as `www/serve.mjs` serves it: a
//! file's .br or .gz sibling when the browser accepts it), the run's events as server-sent
//! events, and the page's controls.
//!
//! One thread accepts connections; each connection gets a thread of its own, answers one request
//! and closes (`Connection: close`), so an open event stream or an idle tab holds nothing else up.
//! (tiny_http served this before. Its connection pool hands a new connection to an idle thread
//! it counts as waiting, and a second connection that arrives before that thread wakes is queued
//! behind the busy ones; a browser's idle keep-alive connections keep every other pool thread
//! busy, so a second tab's page load waited for minutes, once in a few e2e runs.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use vramlab::engine::ConfigError;
use vramlab::engine::train::live::{CONTROL_PATH, Control, EVENTS_PATH};

use super::hub::{Cursor, Hub};

/// How long a stream waits with nothing to send before a keep-alive comment: writing is how a
/// closed tab is noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(10);
/// A control is one word; anything longer is refused unread.
const CONTROL_BYTES: u64 = 64;
/// The most a request's line and headers may take: a browser's are a few hundred bytes.
const HEAD_BYTES: u64 = 16 << 10;
/// How long a connection may take to send its request before it is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Listen on the loopback at `port` (0: a free one) and serve `page` and `hub` from a thread of
/// its own; returns the address listened on.
pub fn start(port: u16, page: PathBuf, hub: Arc<Hub>) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).map_err(|err| {
        ConfigError::invalid(
            "--port",
            format!("could not listen on 127.0.0.1:{port} ({err}): pass another port, or 0 for a free one"),
        )
    })?;
    let address = listener.local_addr()?;
    let page: Arc<Path> = page.into();
    std::thread::Builder::new()
        .name("live-server".into())
        .spawn(move || {
            for connection in listener.incoming().flatten() {
                let (page, hub) = (page.clone(), hub.clone());
                // A connection that fails midway (a closed tab) has nothing left to answer.
                let _ = std::thread::Builder::new()
                    .name("live-request".into())
                    .spawn(move || answer(connection, &page, &hub));
            }
        })?;
    Ok(address)
}

/// A request's line and the headers this server reads.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    method: String,
    /// The target's path, without its query or fragment.
    path: String,
    accept_encoding: String,
    content_length: u64,
}

/// The request line and headers from `reader`, up to the blank line that ends them.
fn read_head(reader: &mut impl BufRead) -> Result<Head, String> {
    let mut limited = reader.take(HEAD_BYTES);
    let mut line = String::new();
    let mut next_line = |line: &mut String| -> Result<(), String> {
        line.clear();
        match limited.read_line(line) {
            Ok(0) => Err("the request ended before its headers did".into()),
            Ok(_) if !line.ends_with('\n') => Err(format!(
                "the request's head is longer than {HEAD_BYTES} bytes"
            )),
            Ok(_) => Ok(()),
            Err(err) => Err(err.to_string()),
        }
    };
    next_line(&mut line)?;
    let mut words = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (words.next(), words.next(), words.next())
    else {
        return Err(format!("not an HTTP request line: {:?}", line.trim_end()));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("HTTP/1.0 and HTTP/1.1 are served, not {version}"));
    }
    let mut head = Head {
        method: method.to_string(),
        path: target.split(['?', '#']).next().unwrap_or("/").to_string(),
        accept_encoding: String::new(),
        content_length: 0,
    };
    loop {
        next_line(&mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            return Ok(head);
        }
        let Some((name, value)) = header.split_once(':') else {
            return Err(format!("not a header: {header:?}"));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("Accept-Encoding") {
            head.accept_encoding = value.to_string();
        } else if name.eq_ignore_ascii_case("Content-Length") {
            head.content_length = value
                .parse()
                .map_err(|_| format!("Content-Length is not a byte count: {value:?}"))?;
        }
    }
}

fn answer(connection: TcpStream, page: &Path, hub: &Hub) -> std::io::Result<()> {
    connection.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut reader = BufReader::new(connection.try_clone()?);
    let mut writer = connection;
    let head = match read_head(&mut reader) {
        Ok(head) => head,
        Err(why) => return respond(&mut writer, 400, &[], Body::Text(&why)),
    };
    match (head.method.as_str(), head.path.as_str()) {
        ("GET", EVENTS_PATH) => stream(&mut writer, hub),
        ("POST", CONTROL_PATH) => {
            let mut body = String::new();
            let read = reader
                .take(head.content_length.min(CONTROL_BYTES))
                .read_to_string(&mut body);
            match read
                .map_err(|err| err.to_string())
                .and_then(|_| Control::parse(&body))
            {
                Ok(control) => {
                    hub.control(control);
                    respond(&mut writer, 204, &[], Body::Empty)
                }
                Err(err) => respond(&mut writer, 400, &[], Body::Text(&err)),
            }
        }
        ("GET", path) => serve_file(&mut writer, page, path, &head.accept_encoding, true),
        ("HEAD", path) => serve_file(&mut writer, page, path, &head.accept_encoding, false),
        _ => respond(
            &mut writer,
            405,
            &[("Allow", "GET, HEAD, POST")],
            Body::Empty,
        ),
    }
}

/// What follows a response's headers.
enum Body<'a> {
    Empty,
    Text(&'a str),
    /// A file of this many bytes; `None` for a HEAD request's answer, which sends none.
    File(u64, Option<std::fs::File>),
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Method Not Allowed",
    }
}

/// Write a whole response, then the connection closes.
fn respond(
    writer: &mut TcpStream,
    status: u16,
    headers: &[(&str, &str)],
    body: Body,
) -> std::io::Result<()> {
    let length = match &body {
        Body::Empty => 0,
        Body::Text(text) => text.len() as u64,
        Body::File(length, _) => *length,
    };
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if matches!(body, Body::Text(_)) {
        head.push_str("Content-Type: text/plain; charset=utf-8\r\n");
    }
    if status != 204 {
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut out = std::io::BufWriter::new(writer);
    out.write_all(head.as_bytes())?;
    match body {
        Body::Empty | Body::File(_, None) => {}
        Body::Text(text) => out.write_all(text.as_bytes())?,
        Body::File(_, Some(mut file)) => {
            std::io::copy(&mut file, &mut out)?;
        }
    }
    out.flush()
}

/// The run's events from the first, then as they come, until the run's last one.
fn stream(writer: &mut TcpStream, hub: &Hub) -> std::io::Result<()> {
    writer.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
          Connection: close\r\n\r\n",
    )?;
    writer.flush()?;
    hub.opened();
    let sent = send_until_ended(writer, hub);
    hub.closed();
    sent
}

/// The run's events from the first, then as they come, written to `writer` (a tab's stream, or
/// a relayed run's standard error) until the run's last one.
pub(super) fn send_until_ended(writer: &mut dyn Write, hub: &Hub) -> std::io::Result<()> {
    let mut cursor = Cursor::default();
    loop {
        let news = hub.news(cursor, KEEP_ALIVE);
        if news.frames.is_empty() && !news.ended {
            writer.write_all(b": keep-alive\n\n")?;
        }
        for frame in &news.frames {
            writer.write_all(frame.as_bytes())?;
        }
        writer.flush()?;
        cursor = news.cursor;
        if news.ended {
            return Ok(());
        }
    }
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

/// `url_path` under `page`, or `None` when it would leave it.
fn file_under(page: &Path, url_path: &str) -> Option<PathBuf> {
    let relative = url_path.trim_start_matches('/');
    let relative = if relative.is_empty() {
        "index.html"
    } else {
        relative
    };
    let relative = Path::new(relative);
    relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| page.join(relative))
}

/// The coding to send `file` in: its .br or .gz sibling where `accept_encoding` takes it.
fn encoded(file: &Path, accept_encoding: &str) -> Option<(PathBuf, &'static str)> {
    let accepts = |coding: &str| {
        accept_encoding
            .split(',')
            .any(|part| part.trim().starts_with(coding))
    };
    [("br", "br"), ("gzip", "gz")]
        .into_iter()
        .find_map(|(coding, suffix)| {
            let sibling = file.with_extension(match file.extension() {
                Some(e) => format!("{}.{suffix}", e.to_string_lossy()),
                None => suffix.to_string(),
            });
            (accepts(coding) && sibling.is_file()).then_some((sibling, coding))
        })
}

fn serve_file(
    writer: &mut TcpStream,
    page: &Path,
    url_path: &str,
    accept_encoding: &str,
    with_body: bool,
) -> std::io::Result<()> {
    let Some(file) = file_under(page, url_path).filter(|f| f.is_file()) else {
        return respond(writer, 404, &[], Body::Empty);
    };
    let (body, encoding) = match encoded(&file, accept_encoding) {
        Some((sibling, coding)) => (sibling, Some(coding)),
        None => (file.clone(), None),
    };
    let opened = std::fs::File::open(&body)?;
    let length = opened.metadata()?.len();
    let mut headers = vec![
        ("Content-Type", content_type(&file)),
        ("Cache-Control", "no-cache"),
        ("Vary", "Accept-Encoding"),
    ];
    if let Some(coding) = encoding {
        headers.push(("Content-Encoding", coding));
    }
    let body = Body::File(length, with_body.then_some(opened));
    respond(writer, 200, &headers, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_inside_the_page_are_served() {
        let page = Path::new("/srv/page");
        assert_eq!(file_under(page, "/"), Some(page.join("index.html")));
        assert_eq!(
            file_under(page, "/vramlab-web.js"),
            Some(page.join("vramlab-web.js"))
        );
        assert_eq!(file_under(page, "/../etc/passwd"), None);
        assert_eq!(file_under(page, "/a/../../b"), None);
    }

    #[test]
    fn a_requests_head_is_read_to_its_blank_line_and_a_bad_one_is_refused() {
        let sent = "GET /index.html?run=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                    accept-encoding: gzip, br\r\nContent-Length: 4\r\n\r\nstop";
        let mut reader = sent.as_bytes();
        assert_eq!(
            read_head(&mut reader),
            Ok(Head {
                method: "GET".into(),
                path: "/index.html".into(),
                accept_encoding: "gzip, br".into(),
                content_length: 4,
            })
        );
        assert_eq!(reader, b"stop", "the body is left to read");
        let refused = |sent: &str| read_head(&mut sent.as_bytes()).unwrap_err();
        assert!(refused("GET /\r\n\r\n").contains("not an HTTP request line"));
        assert!(refused("GET / HTTP/2\r\n\r\n").contains("not HTTP/2"));
        assert!(refused("GET / HTTP/1.1\r\nHost 1\r\n\r\n").contains("not a header"));
        assert!(refused("GET / HTTP/1.1\r\nHost: 1\r\n").contains("ended before"));
        assert!(refused("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n").contains("byte count"));
        let long = format!(
            "GET / HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(HEAD_BYTES as usize)
        );
        assert!(refused(&long).contains("longer than"));
    }
}
