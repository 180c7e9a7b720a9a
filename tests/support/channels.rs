//! Data channels of the loopback engine, the way the engine provides them.
//!
//! `engine::channels::create {buffer_size?}` makes a channel: one id and one
//! access key, answered as two refs, `writer` (`direction: "write"`) and
//! `reader` (`direction: "read"`). Each side then opens a WebSocket at
//! `/ws/channels/{id}?key=..&dir=write|read`. The engine pipes every text
//! and binary frame of the writer socket into a bounded queue of
//! `buffer_size` frames (default 64, at most 1024) and out of the reader
//! socket, which observably means:
//!
//! * an unknown id or a wrong key is refused at the upgrade with HTTP 404;
//! * a second writer (or reader) of the same channel is closed at once;
//! * a writer may write (up to the buffer) and close before the reader
//!   connects; the reader then gets the buffered frames, then a close frame;
//! * beyond the buffer, the writer is back-pressured until the reader reads;
//! * the reader gets a close frame once the writer is gone and the queue is
//!   drained — whether the writer sent a close frame or just vanished;
//! * after a writer's close frame, frames arriving within 10 ms are still
//!   forwarded (the engine drains them defensively);
//! * a reader that goes away makes the engine drop the writer socket at its
//!   next frame.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use iii_sdk::protocol::ErrorBody;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Bytes;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use uuid::Uuid;

/// Frames queued per channel when `buffer_size` is not given.
pub const DEFAULT_BUFFER: usize = 64;
/// Largest `buffer_size` honoured.
pub const MAX_BUFFER: usize = 1024;
/// How long frames after a writer's close frame are still forwarded.
const DRAIN_AFTER_CLOSE: Duration = Duration::from_millis(10);

enum Item {
    Text(String),
    Binary(Bytes),
}

struct Slot {
    key: String,
    tx: Option<mpsc::Sender<Item>>,
    rx: Option<mpsc::Receiver<Item>>,
}

/// The channel table. Cheap to clone (shared inside).
#[derive(Clone, Default)]
pub struct Channels {
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

impl Channels {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `engine::channels::create`.
    pub fn create(&self, data: &Value) -> Result<Value, ErrorBody> {
        let buffer = match data.get("buffer_size") {
            None | Some(Value::Null) => DEFAULT_BUFFER,
            Some(v) => v.as_u64().map(|n| n as usize).ok_or_else(|| {
                ErrorBody::new(
                    "invocation_failed",
                    "serialization error: invalid type for field `buffer_size`",
                )
            })?,
        }
        .clamp(1, MAX_BUFFER);
        let (tx, rx) = mpsc::channel(buffer);
        let id = Uuid::new_v4().to_string();
        let key = Uuid::new_v4().to_string();
        self.lock().insert(
            id.clone(),
            Slot {
                key: key.clone(),
                tx: Some(tx),
                rx: Some(rx),
            },
        );
        let r =
            |direction: &str| json!({"channel_id": id, "access_key": key, "direction": direction});
        Ok(json!({"writer": r("write"), "reader": r("read")}))
    }

    /// Whether `id` names a channel whose key is `key` (the upgrade check).
    pub fn knows(&self, id: &str, key: &str) -> bool {
        self.lock().get(id).is_some_and(|s| s.key == key)
    }

    /// Channels created whose ends have not both been taken yet.
    pub fn open(&self) -> usize {
        self.lock()
            .values()
            .filter(|s| s.tx.is_some() || s.rx.is_some())
            .count()
    }

    // A channel stays known once both ends are taken (a late second
    // reader or writer is closed at once, not refused): the engine
    // behaves so, and a test engine lives only as long as its test.
    fn take_sender(&self, id: &str) -> Option<mpsc::Sender<Item>> {
        self.lock().get_mut(id)?.tx.take()
    }

    fn take_receiver(&self, id: &str) -> Option<mpsc::Receiver<Item>> {
        self.lock().get_mut(id)?.rx.take()
    }
}

/// The `key` and `dir` of a channel URL's query.
pub fn query_params(query: &str) -> (String, String) {
    let mut key = String::new();
    let mut dir = String::new();
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "key" => key = v.into_owned(),
            "dir" => dir = v.into_owned(),
            _ => {}
        }
    }
    (key, dir)
}

/// Serve one channel socket (the upgrade already checked id and key).
pub async fn serve(
    mut ws: WebSocketStream<TcpStream>,
    channels: Channels,
    id: &str,
    dir: &str,
    mut shutdown: watch::Receiver<bool>,
) {
    match dir {
        "write" => {
            let Some(tx) = channels.take_sender(id) else {
                let _ = ws.close(None).await;
                return;
            };
            loop {
                let frame = tokio::select! {
                    _ = shutdown.changed() => break,
                    frame = ws.next() => frame,
                };
                let item = match frame {
                    Some(Ok(WsMessage::Text(t))) => Item::Text(t.to_string()),
                    Some(Ok(WsMessage::Binary(b))) => Item::Binary(b),
                    Some(Ok(WsMessage::Close(_))) => {
                        let deadline = tokio::time::Instant::now() + DRAIN_AFTER_CLOSE;
                        while let Ok(Some(Ok(frame))) =
                            tokio::time::timeout_at(deadline, ws.next()).await
                        {
                            let item = match frame {
                                WsMessage::Text(t) => Item::Text(t.to_string()),
                                WsMessage::Binary(b) => Item::Binary(b),
                                _ => break,
                            };
                            if tx.send(item).await.is_err() {
                                break;
                            }
                        }
                        break;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => break,
                };
                let sent = tokio::select! {
                    _ = shutdown.changed() => false,
                    r = tx.send(item) => r.is_ok(),
                };
                if !sent {
                    break;
                }
            }
            drop(tx);
        }
        "read" => {
            let Some(mut rx) = channels.take_receiver(id) else {
                let _ = ws.send(WsMessage::Close(None)).await;
                return;
            };
            loop {
                let item = tokio::select! {
                    _ = shutdown.changed() => break,
                    item = rx.recv() => item,
                };
                let frame = match item {
                    Some(Item::Text(t)) => WsMessage::Text(t.into()),
                    Some(Item::Binary(b)) => WsMessage::Binary(b),
                    None => {
                        let _ = ws.send(WsMessage::Close(None)).await;
                        break;
                    }
                };
                if ws.send(frame).await.is_err() {
                    break;
                }
            }
        }
        _ => {
            let _ = ws.close(None).await;
        }
    }
}
