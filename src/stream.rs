//! Byte streams between this worker and its callers, free of any transport.
//!
//! The engine moves large payloads through channels: a pair of WebSocket
//! ends addressed by a [`ContentRef`] (`channel_id`, `access_key`,
//! `direction`). The core sees only the two traits here: a [`ByteSink`] it
//! writes a stream into (e.g. `shell::fs::read` streaming a file out) and a
//! [`ByteSource`] it drains (e.g. `shell::fs::write` reading a caller's
//! upload). The bus implements them over the SDK's channel types; unit tests
//! use in-memory pipes. Nothing in this module knows about iii.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// Direction of data flow on a channel end. (No doc comment: the contract's
// ContentDirection schema has no description.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContentDirection {
    #[default]
    Read,
    Write,
}

/// Wire-identical mirror of `iii_sdk::channels::StreamChannelRef`. The SDK type lacks `JsonSchema` in 0.11.3, which would block typed registration of `shell::fs::write`/`read`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContentRef {
    /// Opaque identifier for the open stream channel.
    pub channel_id: String,
    /// Secret key that authorises access to this channel.
    pub access_key: String,
    /// Direction of data flow: "read" (consume) or "write" (produce).
    #[serde(default)]
    pub direction: ContentDirection,
}

/// A failure of the byte transport itself (connect, frame, close).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamError(pub String);

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The local end of a stream we produce. Bytes are delivered in order;
/// [`ByteSink::finish`] marks the end of the stream for the consumer.
#[async_trait::async_trait]
pub trait ByteSink: Send {
    /// Send one chunk. Returns once the transport accepted it, which is
    /// where back-pressure from a slow consumer is felt.
    async fn write(&mut self, chunk: Vec<u8>) -> Result<(), StreamError>;
    /// End the stream normally.
    async fn finish(self: Box<Self>) -> Result<(), StreamError>;
}

/// The local end of a stream we consume.
#[async_trait::async_trait]
pub trait ByteSource: Send {
    /// The next chunk, or `None` once the producer closed the stream.
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, StreamError>;
}

/// An in-memory channel pair, for tests of the core without an engine.
pub mod memory {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;
    use tokio::sync::mpsc;

    /// One end pair of an in-memory pipe.
    pub struct PipeSink(pub mpsc::Sender<Vec<u8>>);
    pub struct PipeSource(pub mpsc::Receiver<Vec<u8>>);

    #[async_trait::async_trait]
    impl ByteSink for PipeSink {
        async fn write(&mut self, chunk: Vec<u8>) -> Result<(), StreamError> {
            self.0
                .send(chunk)
                .await
                .map_err(|_| StreamError("the reader went away".into()))
        }
        async fn finish(self: Box<Self>) -> Result<(), StreamError> {
            Ok(())
        }
    }

    #[async_trait::async_trait]
    impl ByteSource for PipeSource {
        async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, StreamError> {
            Ok(self.0.recv().await)
        }
    }

    /// The two not-yet-taken ends of one channel.
    type Ends = (Option<PipeSink>, Option<PipeSource>);

    /// A registry of in-memory channels addressed like engine channels.
    #[derive(Default)]
    pub struct Pipes {
        ends: Mutex<HashMap<String, Ends>>,
        next: Mutex<u64>,
    }

    impl Pipes {
        /// Create a channel with room for `buffer` chunks; returns its refs
        /// (writer, reader).
        pub fn create(&self, buffer: usize) -> (ContentRef, ContentRef) {
            let (tx, rx) = mpsc::channel(buffer.max(1));
            let id = {
                let mut n = self.next.lock().unwrap_or_else(|p| p.into_inner());
                *n += 1;
                format!("mem-{n}")
            };
            self.ends
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id.clone(), (Some(PipeSink(tx)), Some(PipeSource(rx))));
            let r = |direction| ContentRef {
                channel_id: id.clone(),
                access_key: "k".into(),
                direction,
            };
            (r(ContentDirection::Write), r(ContentDirection::Read))
        }

        /// Take the writing end of a channel (once).
        pub fn take_sink(&self, r: &ContentRef) -> Option<PipeSink> {
            self.ends
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_mut(&r.channel_id)
                .and_then(|e| e.0.take())
        }

        /// Take the reading end of a channel (once).
        pub fn take_source(&self, r: &ContentRef) -> Option<PipeSource> {
            self.ends
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_mut(&r.channel_id)
                .and_then(|e| e.1.take())
        }
    }
}
