//! Engine byte channels for the core's [`crate::stream`] traits.
//!
//! A channel is created with the engine function `engine::channels::create`
//! (through the SDK helper); each side then opens its own WebSocket to the
//! engine. The SDK's writer splits a chunk into 64 KiB frames and waits for
//! each send, so a slow consumer back-pressures our producer. Every sink we
//! hand out ends with a close frame, even when nothing was written.

use crate::stream::{ByteSink, ByteSource, ContentDirection, ContentRef, StreamError};
use iii_sdk::IIIClient;
use iii_sdk::channel::{ChannelReader, ChannelWriter, StreamChannelRef};
use iii_sdk::helpers::ChannelDirection;

fn to_sdk(r: &ContentRef, direction: ChannelDirection) -> StreamChannelRef {
    StreamChannelRef {
        channel_id: r.channel_id.clone(),
        access_key: r.access_key.clone(),
        direction,
    }
}

fn from_sdk(r: &StreamChannelRef) -> ContentRef {
    ContentRef {
        channel_id: r.channel_id.clone(),
        access_key: r.access_key.clone(),
        direction: match r.direction {
            ChannelDirection::Read => ContentDirection::Read,
            ChannelDirection::Write => ContentDirection::Write,
        },
    }
}

struct SdkSink(ChannelWriter);

#[async_trait::async_trait]
impl ByteSink for SdkSink {
    async fn write(&mut self, chunk: Vec<u8>) -> Result<(), StreamError> {
        self.0
            .write(&chunk)
            .await
            .map_err(|e| StreamError(format!("channel write failed: {e}")))
    }

    async fn finish(self: Box<Self>) -> Result<(), StreamError> {
        // The SDK's writer connects on its first `write` and its `close` sends
        // nothing when it never connected: a stream that carried no bytes
        // (an empty file) would leave the reader waiting forever. An empty
        // write connects without sending a frame, so every stream ends with
        // a close, whatever its size.
        self.0
            .write(&[])
            .await
            .map_err(|e| StreamError(format!("channel open failed: {e}")))?;
        self.0
            .close()
            .await
            .map_err(|e| StreamError(format!("channel close failed: {e}")))
    }
}

struct SdkSource(ChannelReader);

#[async_trait::async_trait]
impl ByteSource for SdkSource {
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, StreamError> {
        self.0
            .next_binary()
            .await
            .map_err(|e| StreamError(format!("channel read failed: {e}")))
    }
}

/// Create a channel; the caller gets the reader's ref, we keep the writer.
pub async fn create_outgoing(
    iii: &IIIClient,
) -> Result<(ContentRef, Box<dyn ByteSink>), StreamError> {
    let channel = iii_sdk::helpers::create_channel(iii, None)
        .await
        .map_err(|e| StreamError(format!("engine::channels::create failed: {e}")))?;
    Ok((
        from_sdk(&channel.reader_ref),
        Box::new(SdkSink(channel.writer)),
    ))
}

/// Open the reading end of a caller's channel. The ref's `direction` is
/// informational: we always connect as the reader.
pub fn open_incoming(iii: &IIIClient, r: &ContentRef) -> Box<dyn ByteSource> {
    let reader = ChannelReader::new(iii.address(), &to_sdk(r, ChannelDirection::Read));
    Box::new(SdkSource(reader))
}
