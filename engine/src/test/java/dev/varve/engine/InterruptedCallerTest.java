package dev.varve.engine;

import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * A caller thread that is interrupted (a {@code Future.cancel(true)}, an executor's {@code shutdownNow}) does not
 * break the store: the JDK closes a file channel a thread is interrupted in, which failed that read and every later
 * one, from every thread, until the store was reopened.
 */
@Timeout(60)
@Isolated("counts the threads of every store in the JVM")
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

    /**
     * close() from a thread whose interrupt is set (a task cancelled just before it closes the store): its final
     * checkpoint waited for the checkpoint threads with an interruptible get and failed, the close threw, and the
     * agents' joins gave up at once, leaving the archiver running on closing files; the directory fsync of the
     * checkpoint marker's rename was a plain channel the interrupt closed.
     */
    @Test
    void closeFromAnInterruptedThreadCheckpointsAndStopsItsThreads() throws Exception {
        VarveConfig config = config();
        Varve store = Varve.open(config);
        Table t = store.table("t");
        for (int i = 0; i < 200; i++) t.put(key(i), bytes(i, 300));
        long snapshot = store.snapshotNow();
        t.put(key(0), bytes(-1, 300));
        inInterruptedThread(() -> {
            store.close();
            assertTrue(Thread.currentThread().isInterrupted(), "the caller's interrupt is kept");
        });
        for (Thread th : Thread.getAllStackTraces().keySet())
            assertFalse(th.getName().endsWith("[" + config.name() + "]") && th.isAlive(), th.getName() + " still runs after close");
        try (Varve again = Varve.open(config)) {
            assertEquals(0, again.recoveryReport().replayedRecords(), "close wrote its final checkpoint");
            assertArrayEquals(bytes(-1, 300), again.table("t").get(key(0)));
            try (SnapshotView past = again.asOf(snapshot)) {
                assertArrayEquals(bytes(0, 300), past.table("t").get(key(0)));
            }
        }
    }

    /**
     * Under FSYNC a put that fills a WAL segment names the next one (a rename and a directory fsync) on the writer's
     * thread: with the writer's interrupt set, the directory fsync's plain channel was closed by it, the WAL failed and
     * the store refused every later write.
     */
    @Test
    void interruptedFsyncWritersSwitchWalSegments() throws Exception {
        VarveConfig config = config();
        byte[] big = bytes(5, 64 << 10);
        try (Varve store = Varve.open(config)) {
            Table t = store.table("t");
            inInterruptedThread(() -> {
                for (int i = 0; i < 200; i++) { // 12.5 MiB of WAL: three segment switches of 4 MiB
                    t.put(key(i % 50), big);
                    assertTrue(Thread.currentThread().isInterrupted(), "the caller's interrupt is kept");
                }
            });
            t.put(key(0), bytes(9, 300));
        }
        try (Varve store = Varve.open(config)) {
            assertArrayEquals(bytes(9, 300), store.table("t").get(key(0)));
            assertArrayEquals(big, store.table("t").get(key(1)));
        }
    }

    /**
     * A file renamed while open (every WAL segment after the first is written under its temporary name, then named)
     * whose channel an interrupt closes was reopened under the name it was opened with: gone (a WAL segment:
     * NoSuchFileException, the WAL failed) or created anew and empty (a file opened with create: later writes went
     * to it, not to the renamed file).
     */
    @Test
    void aRenamedFileSurvivesInterruptsOfItsUsers() throws Exception {
        FileIOFactory io = FileIOFactory.standard();
        Path tmp = dir.resolve("file.tmp"), named = dir.resolve("file");
        AtomicReference<Throwable> failed = new AtomicReference<>();
        AtomicBoolean done = new AtomicBoolean();
        try (FileIO f = io.open(tmp, true)) {
            f.write(ByteBuffer.allocate(4096), 0);
            io.atomicMove(tmp, named);
            Thread worker = new Thread(() -> {
                ByteBuffer b = ByteBuffer.allocate(4096);
                try {
                    // 100 rounds: the first interrupt already reopens the channel, and each of the 64 blocks is written
                    for (int i = 0; i < 100; i++) {
                        b.clear();
                        f.write(b, (i % 64) * 4096L);
                        f.forceData();
                    }
                } catch (Throwable e) {
                    failed.set(e);
                } finally {
                    done.set(true);
                }
            });
            worker.start();
            while (!done.get()) worker.interrupt();
            worker.join();
        }
        if (failed.get() != null) throw new AssertionError("a write or force of the renamed file failed", failed.get());
        assertFalse(Files.exists(tmp), "the old name was created again");
        assertEquals(64 * 4096L, Files.size(named), "every write reached the renamed file");
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
