package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The store's life cycle against concurrent callers: a close racing every operation, a partition destroyed under its
 * readers and writers, a table created by many threads at once, views closed under their readers.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ConcurrentLifecycleTest {
    @TempDir
    Path dir;

    private VarveConfig.Builder config() {
        return FixtureSupport.small(dir).dataRegionSize(16L << 20).partitions(3).checkpointFrequency(Duration.ofMillis(25))
                .retention(RankTreePolicy.levels(Retention.keepLast(3), Retention.keepAll()));
    }

    private static byte[] key(int writer, long i) {
        return utf8(String.format("w%d-%08d", writer, i));
    }

    private static byte[] value(long i) {
        return ByteBuffer.allocate(Long.BYTES + (int) (i * 53 % 1300)).putLong(0, i).array();
    }

    /** One kind of call a racing thread makes again and again; what it did is recorded in {@link Race}. */
    private interface Op {
        void run(Varve store, Race race, int thread, long i) throws Exception;
    }

    /** What the threads racing a close were told: writes acknowledged and refused, checkpoint futures. */
    private static final class Race {
        final Map<String, byte[]> acknowledged = new ConcurrentHashMap<>();
        final Map<String, byte[]> refused = new ConcurrentHashMap<>();
        final List<CompletableFuture<?>> checkpoints = java.util.Collections.synchronizedList(new ArrayList<>());
        /** A rank-2 snapshot (kept by keepAll) of the base keys, which one thread overwrites: its views read the archive. */
        long old;
    }

    private static final int BASE_KEYS = 300;
    /** Writes cycle over this many keys a thread, so the table (and every full scan of it) stays small however long the race. */
    private static final int KEYS_PER_THREAD = 2000;

    private static byte[] base(long i) {
        return utf8("base-" + i);
    }

    private static final List<Op> OPS = List.of(
            (s, r, t, i) -> { // overwrites what the old snapshot holds, and reads it back as of the snapshot
                s.table("t").put(base(i % BASE_KEYS), value(i));
                try (SnapshotView v = s.asOf(r.old)) {
                    for (long k = i % 7; k < BASE_KEYS; k += 29) assertArrayEquals(value(1_000_000 + k), v.table("t").get(base(k)), "base key " + k + " as of " + r.old);
                    try (Cursor c = v.table("t").scan(base(i % BASE_KEYS), null)) {
                        for (int n = 0; n < 40 && c.next(); n++) {
                            String k = new String(c.key());
                            if (k.startsWith("base-")) assertArrayEquals(value(1_000_000 + Long.parseLong(k.substring(5))), c.value(), k + " as of " + r.old);
                        }
                    }
                }
            },
            (s, r, t, i) -> { // a put: acknowledged or refused
                byte[] k = key(t, i % KEYS_PER_THREAD);
                try {
                    s.table("t").put(k, value(i));
                } catch (IllegalStateException e) {
                    r.refused.put(new String(k), value(i));
                    throw e;
                }
                r.acknowledged.put(new String(k), value(i));
            },
            (s, r, t, i) -> { // a batch over two tables, a caller-placed partition among them
                byte[] k = key(t, i % KEYS_PER_THREAD);
                try {
                    s.write(b -> b.put("t", k, value(i)).put("c", (int) (i % 2), k, value(i)));
                } catch (IllegalStateException e) {
                    r.refused.put(new String(k), value(i));
                    throw e;
                }
                r.acknowledged.put(new String(k), value(i));
            },
            (s, r, t, i) -> s.table("t").get(key(t, i / 2)),
            (s, r, t, i) -> {
                try (Cursor c = s.table("t").scan(null, null)) {
                    FixtureSupport.drain(c);
                }
            },
            (s, r, t, i) -> {
                long id;
                if (i % 2 == 0) id = s.snapshotNow();
                else { // a batch with its snapshot: acknowledged or refused as a put
                    byte[] k = key(t, i % KEYS_PER_THREAD);
                    try {
                        id = s.writeAndSnapshot(b -> b.put("t", k, value(i)));
                    } catch (IllegalStateException e) {
                        r.refused.put(new String(k), value(i));
                        throw e;
                    }
                    r.acknowledged.put(new String(k), value(i));
                }
                try (SnapshotView v = s.asOf(id); Cursor c = v.table("t").scan(null, null)) {
                    FixtureSupport.drain(c);
                } catch (SnapshotNotFoundException dropped) {
                    // another thread's declarations pushed it out of keepLast(3): said so
                }
                if (i % 3 == 0) {
                    try {
                        s.rank(id, 2);
                    } catch (SnapshotNotFoundException dropped) {
                        // as above
                    }
                }
            },
            (s, r, t, i) -> {
                if (i % 4 == 0 && i < 400) r.checkpoints.add(s.checkpoint());
                VarveMetrics m = s.metrics(); // every figure, those read from the archive's files too
                m.writes();
                m.archiveBytes();
                m.archiveBytesReclaimed();
                m.archiveBytesPerLevel();
                m.archiveDeadBytes();
                m.archiveBytesCopiedByRanking();
                m.diffCompactness();
                m.lastCheckpoint();
                m.dirtyPages();
                m.checkpointBufferUsedPages();
                m.failure();
                s.snapshots();
                s.droppedSnapshots(5);
                s.tables();
                s.table("new-" + (i % 7));
            },
            (s, r, t, i) -> {
                Partition p = s.table("c").partition(1);
                p.size();
                try (Cursor c = p.scan(null, null)) {
                    FixtureSupport.drain(c);
                }
                s.sync();
            });

    /**
     * Threads run every kind of call while another closes the store: each call completes or throws
     * IllegalStateException; close returns; every checkpoint future completes; the reopened store holds every
     * acknowledged write and none that was refused.
     */
    @ParameterizedTest
    @EnumSource(value = WalSyncMode.class, names = {"LOG_ONLY", "FSYNC"})
    void closeRacingEveryOperation(WalSyncMode mode) throws Exception {
        VarveConfig cfg = config().walSyncMode(mode).build();
        ExecutorService pool = Executors.newFixedThreadPool(OPS.size());
        try {
            for (int round = 0; round < (mode == WalSyncMode.FSYNC ? 1 : 4); round++) {
                Race race = new Race();
                AtomicBoolean closing = new AtomicBoolean();
                Varve store = Varve.open(cfg);
                store.table("t");
                store.table("c", TableOptions.callerPlaced(2));
                for (int k = 0; k < BASE_KEYS; k++) store.table("t").put(base(k), value(1_000_000 + k));
                race.old = store.snapshotNow(2);
                CountDownLatch warm = new CountDownLatch(OPS.size());
                List<Future<Throwable>> threads = new ArrayList<>();
                int base = round * 100;
                for (int o = 0; o < OPS.size(); o++) {
                    Op op = OPS.get(o);
                    int thread = base + o;
                    threads.add(pool.submit(() -> {
                        boolean counted = false;
                        try {
                            for (long i = 0; i < 50_000_000; i++) { // bounded; a call the close never reaches fails below
                                try {
                                    op.run(store, race, thread, i);
                                } catch (IllegalStateException e) {
                                    // the store closed under it: the one answer allowed, once the close began
                                    return closing.get() ? null : new AssertionError("IllegalStateException before the close", e);
                                } catch (Throwable t) {
                                    return t;
                                }
                                if (i == 5) {
                                    warm.countDown();
                                    counted = true;
                                }
                            }
                            return new AssertionError("thread " + thread + " never saw the close");
                        } finally {
                            if (!counted) warm.countDown(); // a thread that failed early: reported below
                        }
                    }));
                }
                boolean warmed = warm.await(90, TimeUnit.SECONDS);
                String stuck = warmed ? "" : ConcurrencyTest.threadDump();
                closing.set(true);
                store.close();
                for (Future<Throwable> f : threads) {
                    Throwable t = f.get(60, TimeUnit.SECONDS);
                    if (t != null) fail("a call racing close threw " + t + " rather than IllegalStateException", t);
                }
                assertTrue(warmed, () -> "not every thread made its first calls:\n" + stuck);
                for (CompletableFuture<?> f : race.checkpoints) {
                    try {
                        f.get(60, TimeUnit.SECONDS);
                    } catch (ExecutionException e) {
                        assertTrue(e.getCause() instanceof IllegalStateException, "a checkpoint racing close failed with " + e.getCause());
                    }
                }
                try (Varve again = Varve.open(cfg)) {
                    Table t = again.table("t");
                    for (Map.Entry<String, byte[]> e : race.acknowledged.entrySet())
                        assertArrayEquals(e.getValue(), t.get(utf8(e.getKey())), "acknowledged " + e.getKey() + " after reopen");
                    for (String refused : race.refused.keySet()) // a refused write left the key as it was: checked above when it was written before
                        if (!race.acknowledged.containsKey(refused)) assertNull(t.get(utf8(refused)), "refused " + refused + " is there after reopen");
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A caller-placed partition destroyed again and again while one thread writes it (a batch puts each key into it
     * and into a partition never destroyed), others read and scan it, and another declares snapshots: nothing fails;
     * scans are in order; and as of each snapshot the destroyed partition holds exactly a run of the latest keys
     * the other partition holds (a destroy empties it whole, a batch is in both or neither).
     */
    @Test
    void destroyRacingPutsGetsScansAndSnapshotsOfItsPartition() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Long> snapshots = java.util.Collections.synchronizedList(new ArrayList<>());
        try (Varve store = Varve.open(config().retention(RankTreePolicy.keepEverything()).build())) {
            Table t = store.table("c", TableOptions.callerPlaced(2));
            List<Future<?>> tasks = new ArrayList<>();
            AtomicInteger written = new AtomicInteger();
            tasks.add(pool.submit(() -> {
                for (int i = 0; i < 3000 && !stop.get(); i++) {
                    int n = i;
                    store.write(b -> b.put("c", 0, key(0, n), value(n)).put("c", 1, key(0, n), value(n)));
                    written.set(n);
                }
                return null;
            }));
            tasks.add(pool.submit(() -> {
                for (int i = 0; i < 60 && !stop.get(); i++) {
                    t.partition(0).destroy();
                    snapshots.add(store.snapshotNow());
                    Thread.yield();
                }
                return null;
            }));
            tasks.add(pool.submit(() -> {
                for (int i = 0; i < 3000 && !stop.get(); i++) {
                    int n = written.get();
                    byte[] v = t.partition(0).get(key(0, n));
                    if (v != null) assertArrayEquals(value(n), v, "get of key " + n);
                    t.partition(0).size();
                    if (i % 20 == 0) try (Cursor c = t.partition(0).scan(null, null)) {
                        for (Map.Entry<byte[], byte[]> e : FixtureSupport.drain(c).entrySet())
                            assertArrayEquals(value(Long.parseLong(new String(e.getKey()).substring(3))), e.getValue(), "scanned value");
                    }
                }
                return null;
            }));
            tasks.add(pool.submit(() -> { // views of the latest snapshots while destroys give their pages back for reuse
                for (int i = 0; i < 400 && !stop.get(); i++) {
                    if (snapshots.isEmpty()) {
                        Thread.yield();
                        continue;
                    }
                    checkDestroyedIsARun(store, snapshots.get(snapshots.size() - 1 - i % Math.min(3, snapshots.size())));
                }
                return null;
            }));
            ConcurrentBatchModelTest.awaitAll(tasks, stop);
            for (long id : snapshots) checkDestroyedIsARun(store, id);
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    /** As of snapshot {@code id}, partition 0 holds the latest keys partition 1 holds, and no other. */
    private static void checkDestroyedIsARun(Varve store, long id) {
        try (SnapshotView v = store.asOf(id)) {
            List<Long> destroyed = keys(v.table("c").partition(0).scan(null, null));
            List<Long> kept = keys(v.table("c").partition(1).scan(null, null));
            assertTrue(destroyed.size() <= kept.size(), "snapshot " + id + ": more keys in the destroyed partition than in the other");
            for (int i = 0; i < destroyed.size(); i++) {
                long expected = kept.get(kept.size() - destroyed.size() + i);
                assertEquals(expected, destroyed.get(i), "snapshot " + id + ": the destroyed partition holds keys other than a run of the latest");
            }
        }
    }

    private static List<Long> keys(Cursor c) {
        List<Long> out = new ArrayList<>();
        try (c) {
            while (c.next()) out.add(Long.parseLong(new String(c.key()).substring(3)));
        }
        return out;
    }

    /**
     * Many threads create the same tables at once (hash-placed and caller-placed) and write through the handle each
     * got: there is one table per name, holding every thread's write, listed once, also after a reopen.
     */
    @Test
    void tablesCreatedByManyThreadsAtOnceAreOneTableEach() throws Exception {
        int threads = 6;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        VarveConfig cfg = config().build();
        try {
            try (Varve store = Varve.open(cfg)) {
                for (int round = 0; round < 20; round++) {
                    String hashed = "h" + round, placed = "p" + round;
                    CountDownLatch go = new CountDownLatch(1);
                    List<Future<?>> tasks = new ArrayList<>();
                    for (int w = 0; w < threads; w++) {
                        int writer = w;
                        tasks.add(pool.submit(() -> {
                            go.await();
                            store.table(hashed).put(key(writer, 0), value(writer));
                            store.table(placed, TableOptions.callerPlaced(3)).partition(writer % 3).put(key(writer, 0), value(writer));
                            store.write(b -> b.put("b" + (writer % 2), key(writer, 1), value(writer)));
                            return null;
                        }));
                    }
                    go.countDown();
                    for (Future<?> f : tasks) f.get(60, TimeUnit.SECONDS);
                }
                checkTables(store, threads);
            }
            try (Varve again = Varve.open(cfg)) {
                checkTables(again, threads);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static void checkTables(Varve store, int threads) {
        List<String> names = store.tables();
        assertEquals(names.stream().distinct().count(), names.size(), "tables listed once each: " + names);
        assertEquals(42, names.size(), "20 hash-placed, 20 caller-placed and the batches' two: " + names);
        for (int round = 0; round < 20; round++) {
            for (int w = 0; w < threads; w++) {
                assertArrayEquals(value(w), store.table("h" + round).get(key(w, 0)), "h" + round + " writer " + w);
                assertArrayEquals(value(w), store.table("p" + round).partition(w % 3).get(key(w, 0)), "p" + round + " writer " + w);
            }
        }
        for (int w = 0; w < threads; w++) assertArrayEquals(value(w), store.table("b" + (w % 2)).get(key(w, 1)), "batch of writer " + w);
    }

    /**
     * Views read on several threads while a writer overwrites what they read, declares snapshots that push the view's
     * out of the policy (so closing the view lets the archive reclaim what it read) and checkpoints run, and each view
     * is closed by another thread at some point of the reads: a read returns the snapshot's data or throws
     * IllegalStateException, never other data, another exception or a hang.
     */
    @Test
    void viewsClosedFromAnotherThreadWhileCursorsRead() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try (Varve store = Varve.open(config().captureBufferSize(256L << 10).archiveSegmentSize(256L << 10)
                .retention(RankTreePolicy.levels(Retention.keepLast(2))).build())) {
            Table t = store.table("t");
            for (int i = 0; i < 400; i++) t.put(key(0, i), value(0));
            Future<?> writer = pool.submit(() -> {
                for (long v = 1; !stop.get() && v < 1_000_000; v++) {
                    t.put(key(0, v * 7 % 400), value(v));
                    if (v % 100 == 0) store.snapshotNow();
                }
                return null;
            });
            for (int round = 0; round < 40; round++) {
                SnapshotView opened = null;
                for (int attempt = 0; opened == null && attempt < 1000; attempt++) {
                    try {
                        opened = store.asOf(store.snapshotNow());
                    } catch (SnapshotNotFoundException pushedOut) {
                        // the writer declared two more before it was opened: keepLast(2) dropped it
                    }
                }
                assertNotNull(opened, "a view of a fresh snapshot opened");
                SnapshotView v = opened;
                long id = v.id();
                Map<Long, byte[]> truth = new java.util.HashMap<>();
                try (Cursor c = v.table("t").scan(null, null)) {
                    while (c.next()) truth.put(Long.parseLong(new String(c.key()).substring(3)), c.value());
                }
                assertEquals(400, truth.size());
                CountDownLatch reading = new CountDownLatch(2);
                List<Future<?>> readers = new ArrayList<>();
                for (int r = 0; r < 2; r++) {
                    int reader = r;
                    readers.add(pool.submit(() -> {
                        reading.countDown();
                        try (Cursor c = v.table("t").scan(null, null)) {
                            for (int i = 0; i < 100_000; i++) {
                                if (reader == 0 ? !c.next() : false) break;
                                if (reader == 0) {
                                    long k = Long.parseLong(new String(c.key()).substring(3));
                                    assertArrayEquals(truth.get(k), c.value(), "view " + id + " key " + k + " read while closing");
                                } else {
                                    long k = i % 400;
                                    assertArrayEquals(truth.get(k), v.table("t").get(key(0, k)), "view " + id + " get " + k + " while closing");
                                }
                            }
                        } catch (IllegalStateException closed) {
                            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
                        }
                        return null;
                    }));
                }
                reading.await();
                for (int spin = 0; spin < round * 50; spin++) Thread.onSpinWait();
                v.close();
                ConcurrentBatchModelTest.awaitAll(readers, new AtomicBoolean());
                if (round % 10 == 0) store.checkpoint().get(60, TimeUnit.SECONDS);
            }
            stop.set(true);
            writer.get(60, TimeUnit.SECONDS);
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }
}
