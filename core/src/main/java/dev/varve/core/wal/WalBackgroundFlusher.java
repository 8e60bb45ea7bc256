package dev.varve.core.wal;

import dev.varve.core.io.StorageException;
import dev.varve.core.util.StoreThreads;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon of {@link dev.varve.config.WalSyncMode#BACKGROUND}: forces the WAL every {@code flushFrequency}. Stops
 * at close, or at the first failure (the WAL has then refused further work and says why to every caller).
 */
final class WalBackgroundFlusher implements Runnable, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WalBackgroundFlusher.class);

    private final Wal wal;
    private final long periodNanos;
    private final Thread thread;
    private volatile boolean running = true;

    WalBackgroundFlusher(Wal wal, Duration flushFrequency) {
        this.wal = wal;
        this.periodNanos = flushFrequency.toNanos();
        this.thread = new Thread(this, "varve-wal-flusher" + StoreThreads.suffix());
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    @Override
    public void run() {
        while (running) {
            long deadline = System.nanoTime() + periodNanos;
            for (long left = periodNanos; running && left > 0; left = deadline - System.nanoTime()) {
                LockSupport.parkNanos(this, left);
            }
            if (!running) return;
            try {
                wal.force();
            } catch (StorageException e) {
                LOG.error("Background WAL flush failed, flusher stops: {}", e.getMessage(), e);
                return;
            } catch (IllegalStateException closed) {
                return;
            }
        }
    }

    /** Stops the thread and waits for it (a force in progress completes first). */
    @Override
    public void close() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
