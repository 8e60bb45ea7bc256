package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A caller thread that is interrupted (a {@code Future.cancel(true)}, an executor's {@code shutdownNow}) does not
 * break the store: the JDK closes a file channel a thread is interrupted in, which failed that read and every later
 * one, from every thread, until the store was reopened.
 */
@Timeout(60)
class InterruptedCallerTest {
    private static final int KEYS = 2_000;

    @TempDir
    Path dir;

    private VarveConfig config() {
        return FixtureSupport.small(dir).partitions(2).walSyncMode(WalSyncMode.FSYNC).build();
    }

    private static byte[] key(int i) {
        return utf8(String.format("key-%05d", i));
    }

    @Test
    void interruptedReadsAndWritesSucceedAndLeaveTheStoreWhole() throws Exception {
        long snapshot;
        try (Varve store = Varve.open(config())) {
            Table t = store.table("t");
            for (int i = 0; i < KEYS; i++) t.put(key(i), bytes(i, 300));
            snapshot = store.snapshotNow();
            for (int i = 0; i < KEYS; i += 2) t.put(key(i), bytes(i + KEYS, 300)); // pre-states go to the archive
        }
        try (Varve store = Varve.open(config())) { // every page cold: the reads below go to the page files
            Table t = store.table("t");
            inInterruptedThread(() -> {
                for (int i = 0; i < KEYS; i += 97) assertArrayEquals(bytes(i % 2 == 0 ? i + KEYS : i, 300), t.get(key(i)));
                try (SnapshotView past = store.asOf(snapshot)) {
                    for (int i = 0; i < KEYS; i += 89) assertArrayEquals(bytes(i, 300), past.table("t").get(key(i)));
                }
                t.put(key(0), bytes(7, 300)); // FSYNC: the put forces the WAL
                assertTrue(Thread.currentThread().isInterrupted(), "the caller's interrupt is kept");
            });
            for (int i = 1; i < KEYS; i++) assertArrayEquals(bytes(i % 2 == 0 ? i + KEYS : i, 300), t.get(key(i)), "key " + i);
            t.put(key(1), bytes(8, 300));
        }
        try (Varve store = Varve.open(config())) {
            assertArrayEquals(bytes(7, 300), store.table("t").get(key(0)));
            assertArrayEquals(bytes(8, 300), store.table("t").get(key(1)));
        }
    }

    @Test
    void interruptedReadsOfAReadOnlyStoreLeaveItReadable() throws Exception {
        try (Varve store = Varve.open(config())) {
            Table t = store.table("t");
            for (int i = 0; i < KEYS; i++) t.put(key(i), bytes(i, 300));
        }
        try (Varve store = Varve.openReadOnly(config())) { // reads the files through its in-memory overlay
            Table t = store.table("t");
            inInterruptedThread(() -> {
                for (int i = 0; i < KEYS; i += 97) assertArrayEquals(bytes(i, 300), t.get(key(i)));
            });
            for (int i = 0; i < KEYS; i++) assertArrayEquals(bytes(i, 300), t.get(key(i)), "key " + i);
        }
    }

    /** Runs {@code work} in a thread whose interrupt status is set throughout, and rethrows what it threw. */
    private static void inInterruptedThread(Runnable work) throws Exception {
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread th = new Thread(() -> {
            Thread.currentThread().interrupt();
            try {
                work.run();
            } catch (Throwable e) {
                failed.set(e);
            }
        });
        th.start();
        th.join();
        if (failed.get() instanceof Exception e) throw e;
        if (failed.get() instanceof Error e) throw e;
    }
}
