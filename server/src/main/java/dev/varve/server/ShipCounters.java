package dev.varve.server;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the server's shipping connections did since it started, for {@code /metrics} and {@code /api/metrics}: images
 * under way, sent and failed, follow streams under way, and the bytes they sent. The shipping threads count; a scrape
 * reads. An operator sees a backup that keeps failing, or a standby that stopped following, without the server's log.
 */
final class ShipCounters {
    private final AtomicInteger imagesInProgress = new AtomicInteger();
    private final LongAdder imagesSent = new LongAdder();
    private final LongAdder imagesFailed = new LongAdder();
    private final LongAdder pageBytes = new LongAdder();
    private final AtomicInteger followers = new AtomicInteger();
    private final LongAdder changeBytes = new LongAdder();

    void imageStarted() {
        imagesInProgress.incrementAndGet();
    }

    /** An image transfer ended: {@code sent}, its END frame handed to the connection; else cut or failed before it. */
    void imageEnded(boolean sent) {
        imagesInProgress.decrementAndGet();
        (sent ? imagesSent : imagesFailed).increment();
    }

    void pagesSent(long bytes) {
        pageBytes.add(bytes);
    }

    void followStarted() {
        followers.incrementAndGet();
    }

    void followEnded() {
        followers.decrementAndGet();
    }

    void changesSent(long bytes) {
        changeBytes.add(bytes);
    }

    /** Image transfers under way: from their snapshot's image open to their END frame or their end. */
    int imagesInProgress() {
        return imagesInProgress.get();
    }

    /** Image transfers whose END frame went to the connection, follow streams' images included. */
    long imagesSent() {
        return imagesSent.sum();
    }

    /** Image transfers that ended before their END frame: the receiver gone, the connection cut, a store error. */
    long imagesFailed() {
        return imagesFailed.sum();
    }

    /** Bytes of pages sent in PAGES frames. */
    long pageBytes() {
        return pageBytes.sum();
    }

    /** Follow streams sending changes now (their image sent). */
    int followers() {
        return followers.get();
    }

    /** Bytes of follow frames sent (changes, snapshots, ranks, heartbeats), framing included. */
    long changeBytes() {
        return changeBytes.sum();
    }
}
