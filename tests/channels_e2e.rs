//! Data channels as the engine serves them (the loopback stand-in, or a real
//! iii engine with `IDE_TEST_ENGINE`), driven by the SDK's own channel types
//! (`helpers::create_channel`, `ChannelWriter`, `ChannelReader`): the same
//! assertions on both keep the stand-in honest.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use iii_sdk::IIIClient;
use iii_sdk::channel::{ChannelReader, StreamChannelRef};
use iii_sdk::helpers::{ChannelDirection, create_channel};
use support::engine::{connect_worker, unique_name};
use support::harness::Engine;

const WAIT: Duration = Duration::from_secs(10);

async fn client(engine: &Engine) -> IIIClient {
    let c = connect_worker(&engine.url(), &unique_name("channels"));
    c.wait_until_registered(WAIT).await.expect("registered");
    c
}

#[tokio::test]
async fn a_writer_may_finish_before_the_reader_connects() {
    let engine = Engine::start().await;
    let c = client(&engine).await;
    let ch = create_channel(&c, None).await.unwrap();
    assert_eq!(ch.writer_ref.channel_id, ch.reader_ref.channel_id);
    assert!(matches!(ch.writer_ref.direction, ChannelDirection::Write));
    assert!(matches!(ch.reader_ref.direction, ChannelDirection::Read));
    ch.writer.write(b"hello ").await.unwrap();
    ch.writer.write(b"world").await.unwrap();
    ch.writer.close().await.unwrap();
    let got = tokio::time::timeout(WAIT, ch.reader.read_all())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, b"hello world");
    if let Some(lb) = engine.loopback() {
        assert_eq!(lb.open_channels(), 0);
    }
    c.shutdown_async().await;
}

/// The SDK's writer connects on its first write: closing one that never
/// wrote sends nothing, and its reader waits. (Why `ide` opens every sink
/// before it closes it.) An empty write connects, and the close then ends
/// the reader at once.
#[tokio::test]
async fn an_empty_stream_ends_only_once_the_writer_connected() {
    let engine = Engine::start().await;
    let c = client(&engine).await;
    let ch = create_channel(&c, None).await.unwrap();
    let reader = tokio::spawn(async move { ch.reader.read_all().await });
    ch.writer.close().await.unwrap();
    // the stream did not end: what the writer sends afterwards is what the
    // reader gets (an ended stream would have read empty)
    ch.writer.write(b"after").await.unwrap();
    ch.writer.close().await.unwrap();
    let got = tokio::time::timeout(WAIT, reader)
        .await
        .expect("the reader ends once the writer that connected closes")
        .unwrap()
        .unwrap();
    assert_eq!(
        got, b"after",
        "a writer that never connected cannot end the stream"
    );
    let ch = create_channel(&c, None).await.unwrap();
    ch.writer.write(&[]).await.unwrap();
    ch.writer.close().await.unwrap();
    let got = tokio::time::timeout(WAIT, ch.reader.read_all())
        .await
        .unwrap()
        .unwrap();
    assert!(got.is_empty());
    c.shutdown_async().await;
}

#[tokio::test]
async fn more_than_the_buffer_streams_with_back_pressure_and_text_frames_pass() {
    let engine = Engine::start().await;
    let c = client(&engine).await;
    let ch = create_channel(&c, Some(2)).await.unwrap();
    let texts = Arc::new(Mutex::new(Vec::new()));
    let seen = texts.clone();
    ch.reader
        .on_message(move |m| seen.lock().unwrap().push(m))
        .await;
    let chunks: Vec<Vec<u8>> = (0..200u32).map(|i| vec![(i % 251) as u8; 40_000]).collect();
    let want: Vec<u8> = chunks.concat();
    let writer = ch.writer;
    let feed = tokio::spawn(async move {
        writer.send_message("start").await.unwrap();
        for c in chunks {
            writer.write(&c).await.unwrap();
        }
        writer.close().await.unwrap();
    });
    let got = tokio::time::timeout(WAIT, ch.reader.read_all())
        .await
        .unwrap()
        .unwrap();
    feed.await.unwrap();
    assert_eq!(got.len(), want.len());
    assert!(got == want);
    assert_eq!(*texts.lock().unwrap(), ["start"]);
    c.shutdown_async().await;
}

#[tokio::test]
async fn an_unknown_channel_or_wrong_key_is_refused_and_ends_are_single_use() {
    let engine = Engine::start().await;
    let c = client(&engine).await;
    let bogus = StreamChannelRef {
        channel_id: "nope".into(),
        access_key: "k".into(),
        direction: ChannelDirection::Read,
    };
    assert!(
        ChannelReader::new(&engine.url(), &bogus)
            .next_binary()
            .await
            .is_err()
    );
    let ch = create_channel(&c, None).await.unwrap();
    let mut wrong = ch.reader_ref.clone();
    wrong.access_key = "wrong".into();
    assert!(
        ChannelReader::new(&engine.url(), &wrong)
            .next_binary()
            .await
            .is_err()
    );
    ch.writer.write(b"x").await.unwrap();
    ch.writer.close().await.unwrap();
    assert_eq!(ch.reader.read_all().await.unwrap(), b"x");
    // the reading end was taken: a second reader is closed at once
    let again = ChannelReader::new(&engine.url(), &ch.reader_ref);
    assert_eq!(
        tokio::time::timeout(WAIT, again.next_binary())
            .await
            .unwrap()
            .unwrap(),
        None
    );
    c.shutdown_async().await;
}
