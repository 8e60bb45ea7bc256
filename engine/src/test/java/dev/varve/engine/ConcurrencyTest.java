package dev.varve.engine;

import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static dev.varve.engine.FixtureSupport.assertSameContent;
import static dev.varve.engine.FixtureSupport.check;
import static dev.varve.engine.FixtureSupport.drain;
import static dev.varve.engine.FixtureSupport.newModel;
import static dev.varve.engine.FixtureSupport.show;
import static dev.varve.engine.FixtureSupport.stamped;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Four threads mix puts, removes, gets, scans and batches over shared and separate partitions while checkpoints run
 * every 50 ms in a region small enough to evict; each thread runs to its ops cap or time limit, and on until at least
 * three checkpoints completed under it. Checked so that it can fail:
 * <ul>
 *   <li>"own" table: each thread owns a disjoint key set spread over all partitions (shared partitions) and keeps an
 *       exact model of it: every get and every scan of its own key range must match the model exactly.</li>
 *   <li>"solo" table: thread t writes only partition t through {@link Table#partition} (separate partitions), exact
 *       model as well.</li>
 *   <li>"shared" table: every thread writes the same keys; values are stamped (key, writer, sequence, CRC), so a torn,
 *       mixed or misplaced value fails. A thread that reads its own value must read its latest write to that key
 *       (no lost update, no stale read); at the end each key holds exactly some thread's last write to it.</li>
 *   <li>scans (table-wide and per partition) must be strictly ordered and every value must validate.</li>
 * </ul>
 * Then close, reopen, and the same final checks.
 */
@Timeout(300)
@Isolated("counts the threads of every store in the JVM")
class ConcurrencyTest {
    private static final int THREADS = 4;
    private static final int OWN_KEYS = 1000;
    private static final int SOLO_KEYS = 150;
    private static final int SHARED_KEYS = 48;
    /**
     * How long the workers run (-Dvarve.concurrencyMillis for a longer soak): 4.5 s, about 9,000 ops a worker and 45
     * checkpoints on two idle cores; the 9 s it ran before repeated the same mix of operations twice as often.
     */
    private static final long RUN_MILLIS = Long.getLong("varve.concurrencyMillis", 4_500);
    private static final int MAX_OPS = 40_000;
    /** Each worker goes on past its ops cap or time limit until this many checkpoints completed under it. */
    private static final int MIN_CHECKPOINTS = 3;

    @TempDir
    Path dir;

    private VarveConfig config() {
        return FixtureSupport.small(dir).checkpointFrequency(Duration.ofMillis(50)).build(); // 8 MiB region, 1 MiB cp buffer
    }

    /** A writer's view of what it did. */
    private static final class Worker {
        final int id;
        final TreeMap<byte[], byte[]> own = newModel();
        final TreeMap<byte[], byte[]> solo = newModel();
        /** Per shared key: this worker's last write (value), {@link #REMOVED}, or absent. */
        final byte[][] lastShared = new byte[SHARED_KEYS][];
        final byte[][] soloKeys;
        long seq;
        long ops;
        long scans;

        Worker(int id) {
            this.id = id;
            List<byte[]> keys = new ArrayList<>();
            for (int i = 0; keys.size() < SOLO_KEYS; i++) {
                byte[] k = utf8("solo-" + id + "-" + i);
                if (KeyHash.partition(k, 4) == id) keys.add(k);
            }
            soloKeys = keys.toArray(new byte[0][]);
        }
    }

    private static final byte[] REMOVED = new byte[0];

    private static byte[] ownKey(int worker, int i) {
        return utf8(String.format("own-%d-%04d", worker, i));
    }

    private static byte[] sharedKey(int i) {
        return utf8(String.format("shared-%03d", i));
    }

    /** Every live thread's stack, for a run that did not end. */
    static String threadDump() {
        StringBuilder b = new StringBuilder();
        Thread.getAllStackTraces().forEach((t, stack) -> {
            b.append('"').append(t.getName()).append("\" ").append(t.getState()).append('\n');
            for (StackTraceElement e : stack) b.append("    at ").append(e).append('\n');
        });
        return b.toString();
    }

    private static int length(SplittableRandom r) {
        int k = r.nextInt(100);
        if (k < 50) return r.nextInt(300);
        if (k < 85) return 1000 + r.nextInt(3000);
        return 6000 + r.nextInt(10_000);
    }

    @Test
    void mixedWorkloadKeepsEveryThreadsModel() throws Exception {
        Worker[] workers = new Worker[THREADS];
        for (int i = 0; i < THREADS; i++) workers[i] = new Worker(i);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong scannerScans = new AtomicLong();
        long evicted;
        long checkpoints;
        try (Varve store = Varve.open(config())) {
            Table own = store.table("own");
            Table solo = store.table("solo");
            Table shared = store.table("shared");
            ExecutorService pool = Executors.newFixedThreadPool(THREADS + 1);
            boolean completed = false;
            try {
                List<Future<?>> futures = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RUN_MILLIS);
                for (Worker w : workers) futures.add(pool.submit(() -> {
                    work(store, own, solo, shared, w, deadline);
                    return null;
                }));
                futures.add(pool.submit(() -> {
                    while (!stop.get()) {
                        checkScan(shared, null);
                        checkScan(own, null);
                        scannerScans.incrementAndGet();
                    }
                    return null;
                }));
                for (int i = 0; i < THREADS; i++) {
                    try {
                        futures.get(i).get(RUN_MILLIS + 60_000, TimeUnit.MILLISECONDS);
                    } catch (TimeoutException e) { // say where every thread is before the pool is interrupted
                        throw new AssertionError("worker " + i + " still running 60 s after its deadline; " + store.metrics() + "\n" + threadDump(), e);
                    }
                }
                stop.set(true);
                futures.get(THREADS).get(30, TimeUnit.SECONDS);
                completed = true;
            } finally {
                stop.set(true);
                pool.shutdownNow();
                boolean ended = pool.awaitTermination(30, TimeUnit.SECONDS);
                if (!ended) System.out.println("the pool did not end after an interrupt:\n" + threadDump());
                if (completed) assertTrue(ended, "the pool ended"); // else the failure above says more, and must not be hidden
            }
            finalCheck(own, solo, shared, workers, "end of run");
            VarveMetrics m = store.metrics();
            StringBuilder s = new StringBuilder("concurrency run: ");
            for (Worker w : workers) s.append("worker ").append(w.id).append(' ').append(w.ops).append(" ops (").append(w.scans).append(" scans), ");
            System.out.println(s + "scanner " + scannerScans.get() + " scans; " + m);
            evicted = m.pagesEvicted();
            checkpoints = m.checkpointsCompleted();
        }
        assertTrue(checkpoints >= MIN_CHECKPOINTS, "checkpoints ran during the workload: " + checkpoints);
        assertTrue(evicted > 0, "the region was small enough to evict pages");
        try (Varve store = Varve.open(config())) {
            assertEquals(0, store.recoveryReport().replayedRecords());
            finalCheck(store.table("own"), store.table("solo"), store.table("shared"), workers, "after reopen");
        }
    }

    private static void work(Varve store, Table own, Table solo, Table shared, Worker w, long deadline) {
        SplittableRandom r = new SplittableRandom(0xC0FFEE + w.id);
        Partition mine = solo.partition(w.id);
        for (int i = 0; i < OWN_KEYS; i++) { // fill first: together more pages than the 2048-page region holds
            byte[] k = ownKey(w.id, i);
            byte[] v = stamped(k, w.id, ++w.seq, length(r));
            own.put(k, v);
            w.own.put(k, v);
        }
        long checkpointsAtStart = store.metrics().checkpointsCompleted();
        // the ops cap or the time limit ends the run, but not before checkpoints ran under it: that is what is tested
        while ((w.ops < MAX_OPS && System.nanoTime() < deadline)
                || store.metrics().checkpointsCompleted() - checkpointsAtStart < MIN_CHECKPOINTS) {
            w.ops++;
            int op = r.nextInt(100);
            if (op < 22) { // put own
                byte[] k = ownKey(w.id, r.nextInt(OWN_KEYS));
                byte[] v = stamped(k, w.id, ++w.seq, length(r));
                own.put(k, v);
                w.own.put(k, v);
            } else if (op < 28) { // remove own
                byte[] k = ownKey(w.id, r.nextInt(OWN_KEYS));
                assertEquals(w.own.remove(k) != null, own.remove(k), "remove own " + show(k));
            } else if (op < 40) { // get own
                byte[] k = ownKey(w.id, r.nextInt(OWN_KEYS));
                assertArrayEquals(w.own.get(k), own.get(k), "get own " + show(k));
            } else if (op < 50) { // solo partition: put / remove / get
                byte[] k = w.soloKeys[r.nextInt(SOLO_KEYS)];
                int kind = r.nextInt(10);
                if (kind < 5) {
                    byte[] v = stamped(k, w.id, ++w.seq, length(r));
                    mine.put(k, v);
                    w.solo.put(k, v);
                } else if (kind < 7) {
                    assertEquals(w.solo.remove(k) != null, mine.remove(k), "remove solo " + show(k));
                } else {
                    assertArrayEquals(w.solo.get(k), mine.get(k), "get solo " + show(k));
                }
            } else if (op < 63) { // put shared
                int s = r.nextInt(SHARED_KEYS);
                byte[] v = stamped(sharedKey(s), w.id, ++w.seq, length(r));
                shared.put(sharedKey(s), v);
                w.lastShared[s] = v;
            } else if (op < 66) { // remove shared
                int s = r.nextInt(SHARED_KEYS);
                shared.remove(sharedKey(s));
                w.lastShared[s] = REMOVED;
            } else if (op < 82 || op >= 98) { // get shared
                int s = r.nextInt(SHARED_KEYS);
                byte[] v = shared.get(sharedKey(s));
                if (v != null) {
                    long[] ws = check(sharedKey(s), v);
                    if (ws[0] == w.id) { // my own value: it must be my latest write to this key
                        byte[] mineLast = w.lastShared[s];
                        if (mineLast == null || mineLast == REMOVED || !Arrays.equals(mineLast, v))
                            throw new AssertionError("worker " + w.id + " read its own write seq " + ws[1] + " of " + show(sharedKey(s))
                                    + " but its latest operation on that key was " + describe(mineLast));
                    }
                }
            } else if (op < 90) { // atomic batch: own key + shared key + solo key
                byte[] k = ownKey(w.id, r.nextInt(OWN_KEYS));
                int s = r.nextInt(SHARED_KEYS);
                byte[] sk = w.soloKeys[r.nextInt(SOLO_KEYS)];
                byte[] v1 = stamped(k, w.id, ++w.seq, length(r));
                byte[] v2 = stamped(sharedKey(s), w.id, ++w.seq, r.nextInt(200));
                boolean removeSolo = r.nextBoolean();
                store.write(b -> {
                    b.put("own", k, v1).put("shared", sharedKey(s), v2);
                    if (removeSolo) b.remove("solo", sk);
                });
                w.own.put(k, v1);
                w.lastShared[s] = v2;
                if (removeSolo) w.solo.remove(sk);
            } else if (op < 92) { // scan my own key range: exact
                byte[] from = utf8("own-" + w.id + "-");
                byte[] to = utf8("own-" + w.id + ".");
                assertSameContent(w.own, checkScan(own, own.scan(from, to)), "worker " + w.id + " own range scan");
                w.scans++;
            } else if (op < 96) { // my solo partition: exact
                assertSameContent(w.solo, checkScan(solo, mine.scan(null, null)), "worker " + w.id + " solo partition scan");
                assertEquals(w.solo.size(), mine.size());
                w.scans++;
            } else { // (96..97) another partition of the shared-partition table: ordered, valid, in that partition
                int p = r.nextInt(4);
                TreeMap<byte[], byte[]> seen = checkScan(own, own.partition(p).scan(null, null));
                for (byte[] k : seen.keySet()) assertEquals(p, KeyHash.partition(k, 4), "partition scan returned a key of another partition");
                w.scans++;
            }
        }
    }

    private static String describe(byte[] last) {
        if (last == null) return "none";
        if (last == REMOVED) return "a remove";
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(last);
        int kl = b.getInt();
        return "a put of seq " + b.getLong(4 + kl + 4);
    }

    /** Drains a scan (a fresh full scan of {@code t} when {@code c} is null), checking order and every stamp. */
    private static TreeMap<byte[], byte[]> checkScan(Table t, Cursor c) {
        TreeMap<byte[], byte[]> seen = drain(c == null ? t.scan(null, null) : c);
        for (var e : seen.entrySet()) check(e.getKey(), e.getValue());
        return seen;
    }

    private static void finalCheck(Table own, Table solo, Table shared, Worker[] workers, String when) {
        TreeMap<byte[], byte[]> allOwn = newModel();
        TreeMap<byte[], byte[]> allSolo = newModel();
        for (Worker w : workers) {
            allOwn.putAll(w.own);
            allSolo.putAll(w.solo);
        }
        FixtureSupport.assertTableHolds(own, allOwn, when + ": own");
        FixtureSupport.assertTableHolds(solo, allSolo, when + ": solo");
        for (int p = 0; p < 4; p++) {
            assertSameContent(workers[p].solo, drain(solo.partition(p).scan(null, null)), when + ": solo partition " + p);
        }
        TreeMap<byte[], byte[]> sharedScan = checkScan(shared, null);
        for (int s = 0; s < SHARED_KEYS; s++) {
            byte[] k = sharedKey(s);
            byte[] v = shared.get(k);
            assertArrayEquals(v, sharedScan.get(k), when + ": get and scan agree on " + show(k));
            if (v == null) {
                boolean someRemoveLast = false;
                boolean anyWrite = false;
                for (Worker w : workers) {
                    anyWrite |= w.lastShared[s] != null;
                    someRemoveLast |= w.lastShared[s] == REMOVED;
                }
                assertTrue(someRemoveLast || !anyWrite, when + ": " + show(k) + " is absent but no thread's last operation on it was a remove");
            } else {
                int writer = (int) check(k, v)[0];
                assertTrue(writer >= 0 && writer < THREADS);
                assertArrayEquals(workers[writer].lastShared[s], v, when + ": " + show(k) + " holds a value of worker " + writer
                        + " that is not its last write to the key (a lost update)");
            }
        }
    }

    /** While one partition's writer holds its lock, readers and writers of the other partitions go on; its own readers wait. */
    @Test
    void otherPartitionsProceedWhileOneIsLocked() throws Exception {
        try (Varve store = Varve.open(config())) {
            Table t = store.table("solo");
            Worker[] byPartition = new Worker[4];
            for (int p = 0; p < 4; p++) {
                byPartition[p] = new Worker(p);
                for (byte[] k : byPartition[p].soloKeys) t.put(k, stamped(k, p, 1, 100));
            }
            PartitionHandle locked = ((TableHandle) t).handleFor(byPartition[0].soloKeys[0]);
            assertEquals(0, locked.index);
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                locked.lockWrites(); // partition 0's writer is inside its critical section
                Future<?> blocked;
                try {
                    Future<?> others = pool.submit(() -> {
                        for (int p = 1; p < 4; p++) {
                            for (byte[] k : byPartition[p].soloKeys) {
                                check(k, t.get(k));
                                t.partition(p).put(k, stamped(k, p, 2, 100));
                            }
                            checkScan(t, t.partition(p).scan(null, null));
                        }
                        return null;
                    });
                    others.get(20, TimeUnit.SECONDS); // would time out if they waited for partition 0
                    byte[] k0 = byPartition[0].soloKeys[1];
                    blocked = pool.submit(() -> t.get(k0));
                    assertThrows(TimeoutException.class, () -> blocked.get(300, TimeUnit.MILLISECONDS),
                            "a reader of the locked partition must wait for its writer");
                } finally {
                    locked.unlockWrites();
                }
                assertTrue(blocked.get(10, TimeUnit.SECONDS) != null);
            } finally {
                pool.shutdownNow();
            }
            for (int p = 1; p < 4; p++) for (byte[] k : byPartition[p].soloKeys) assertEquals(2, check(k, t.get(k))[1]);
            CompletableFuture.runAsync(() -> store.checkpoint().join()).get(30, TimeUnit.SECONDS);
        }
    }
}
