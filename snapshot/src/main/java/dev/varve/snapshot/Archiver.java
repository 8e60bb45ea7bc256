package dev.varve.snapshot;

import dev.varve.core.util.StoreThreads;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The background agent that trickles captured pre-states from the capture buffer into the Pagelog and their
 * mappings into the Maplog, in capture order, between checkpoints. A checkpoint waits for it to catch up with the
 * mark ({@link SnapshotArchive#flush}). A failure stops it and is reported to every later capture and checkpoint.
 */
final class Archiver {
    private static final Logger LOG = LoggerFactory.getLogger(Archiver.class);
    private static final long IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long ENFORCE_NANOS = TimeUnit.SECONDS.toNanos(1);
    private final SnapshotArchive archive;
    private volatile boolean stopped;
    private volatile Thread thread;

    Archiver(SnapshotArchive archive) {
        this.archive = archive;
    }

    synchronized void start() {
        if (thread != null) return;
        thread = new Thread(this::loop, "varve-archiver" + StoreThreads.suffix());
        thread.setDaemon(true);
        thread.start();
    }

    void wake() {
        Thread t = thread;
        if (t != null) LockSupport.unpark(t);
    }

    private void loop() {
        long nextEnforce = 0;
        while (!stopped) {
            try {
                if (System.nanoTime() - nextEnforce >= 0) {
                    archive.enforce(); // keepFor rules drop snapshots as they age
                    nextEnforce = System.nanoTime() + ENFORCE_NANOS;
                }
                if (!archive.archiveNext()) LockSupport.parkNanos(this, IDLE_NANOS);
            } catch (Throwable t) {
                LOG.error("archiver stops", t);
                archive.failed(t);
                return;
            }
        }
    }

    void stop() {
        stopped = true;
        Thread t = thread;
        if (t == null) return;
        LockSupport.unpark(t);
        try {
            t.join(TimeUnit.SECONDS.toMillis(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
