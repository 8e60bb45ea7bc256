package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What concurrent callers see of atomic batches, against a model: each writer thread owns a group of keys spread over
 * two hash-placed tables and every partition of a caller-placed one, and its batch number {@code s} puts every key of
 * its group with value {@code s}, puts the rotating key {@code x[s % 3]} and removes {@code x[(s - 1) % 3]}. So a
 * state that holds part of a batch shows as two keys of one group with different numbers, or a rotating key that
 * disagrees with them.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ConcurrentBatchModelTest {
    private static final int WRITERS = 3;
    private static final int GROUP = 6;
    private static final int PLACED = 4;

    @TempDir
    Path dir;

    private VarveConfig config(RankTreePolicy retention) {
        return FixtureSupport.small(dir).dataRegionSize(32L << 20).partitions(3).checkpointFrequency(Duration.ofMillis(30))
                .retention(retention).build();
    }

    /** The group's keys: {@code table, partition (or -1), key}. */
    private record Slot(String table, int partition, byte[] key) {
    }

    private static List<Slot> group(int w) {
        List<Slot> slots = new ArrayList<>();
        for (int j = 0; j < GROUP; j++) {
            slots.add(new Slot("a", -1, FixtureSupport.utf8("w" + w + "-k" + j)));
            slots.add(new Slot("b", -1, FixtureSupport.utf8("w" + w + "-k" + j)));
            slots.add(new Slot("c", j % PLACED, FixtureSupport.utf8("w" + w + "-k" + j)));
        }
        return slots;
    }

    private static byte[] rotating(int w, long i) {
        return FixtureSupport.utf8("w" + w + "-x" + i % 3);
    }

    /** Batch number {@code s} as a value; its length moves values in and out of overflow chains. */
    private static byte[] value(long s) {
        int length = Long.BYTES + (int) (s * 37 % 1500);
        return ByteBuffer.allocate(length).putLong(0, s).array();
    }

    private static long seq(byte[] v, String what) {
        assertNotNull(v, what + " is missing");
        assertTrue(v.length >= Long.BYTES, what + ": not a value this test wrote");
        long s = ByteBuffer.wrap(v).getLong(0);
        assertEquals(Long.BYTES + (int) (s * 37 % 1500), v.length, what + ": value of batch " + s + " has the wrong length");
        return s;
    }

    private static void batch(Varve store, int w, long s, List<Slot> slots) {
        store.write(b -> {
            for (Slot slot : slots) {
                if (slot.partition() < 0) b.put(slot.table(), slot.key(), value(s));
                else b.put(slot.table(), slot.partition(), slot.key(), value(s));
            }
            b.put("a", rotating(w, s), value(s));
            if (s > 1) b.remove("a", rotating(w, s - 1));
        });
    }

    private static byte[] read(Varve store, Slot slot) {
        Table t = store.table(slot.table());
        return slot.partition() < 0 ? t.get(slot.key()) : t.partition(slot.partition()).get(slot.key());
    }

    private static void createTables(Varve store) {
        store.table("a");
        store.table("b");
        store.table("c", TableOptions.callerPlaced(PLACED));
    }

    /**
     * Readers never see part of a batch: reading a group's keys one by one in a random order, once a read saw batch
     * {@code s}, no later read of the group sees an earlier batch (the batch's partitions are all locked while it is
     * applied, so what one get saw of it every later get sees); a rotating key that is present holds the batch it
     * names; and a partition scan (copied in batches, each under the partition's lock) never goes back either.
     */
    @Test
    void readersNeverSeeHalfABatch() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(WRITERS + 2);
        try (Varve store = Varve.open(config(RankTreePolicy.keepEverything()))) {
            createTables(store);
            for (int w = 0; w < WRITERS; w++) batch(store, w, 1, group(w));
            List<Future<?>> tasks = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                tasks.add(pool.submit(() -> {
                    List<Slot> slots = group(writer);
                    for (long s = 2; s <= 1500 && !stop.get(); s++) batch(store, writer, s, slots);
                    return null;
                }));
            }
            for (int r = 0; r < 2; r++) {
                long seed = r;
                tasks.add(pool.submit(() -> {
                    Random rnd = new Random(seed);
                    for (int round = 0; round < 3000 && !stop.get(); round++) readGroup(store, rnd);
                    return null;
                }));
            }
            awaitAll(tasks, stop);
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    private static void readGroup(Varve store, Random rnd) {
        int w = rnd.nextInt(WRITERS);
        List<Slot> slots = group(w);
        java.util.Collections.shuffle(slots, rnd);
        long seen = 0;
        for (Slot slot : slots.subList(0, 6)) {
            String what = "writer " + w + " " + slot.table() + "/" + FixtureSupport.show(slot.key());
            long s = seq(read(store, slot), what);
            assertTrue(s >= seen, what + " holds batch " + s + " after another key of the same batches showed " + seen + ": a torn batch");
            seen = s;
            long i = rnd.nextInt(3);
            byte[] x = store.table("a").get(rotating(w, i));
            if (x != null) {
                long xs = seq(x, "rotating key " + i);
                assertEquals(i, xs % 3, "rotating key " + i + " holds batch " + xs);
                assertTrue(xs >= seen, "rotating key " + i + " holds batch " + xs + " after batch " + seen + " was seen: a torn batch");
                seen = xs;
            }
        }
        // a partition of the caller-placed table: keys in order, each writer's batches never going back
        long[] last = new long[WRITERS];
        byte[] previous = null;
        try (Cursor c = store.table("c").partition(rnd.nextInt(PLACED)).scan(null, null)) {
            while (c.next()) {
                if (previous != null) assertTrue(java.util.Arrays.compareUnsigned(previous, c.key()) < 0, "partition scan out of order");
                previous = c.key();
                int writer = c.key()[1] - '0';
                long s = seq(c.value(), "scanned " + FixtureSupport.show(c.key()));
                assertTrue(s >= last[writer], "partition scan went back from batch " + last[writer] + " to " + s + " of writer " + writer);
                last[writer] = s;
            }
        }
    }

    /**
     * I9 with atomic batches over several tables and partitions, written by several threads, while two threads declare
     * snapshots (plain, and with a batch of their own through {@code writeAndSnapshot}, whose counter only that thread
     * writes) and checkpoints run: as of each snapshot, every writer's group holds one batch whole — no earlier than
     * the last the writer completed before the declaration was called, no later than the last it had started when the
     * declaration returned — with exactly the rotating key that batch left; a {@code writeAndSnapshot}'s snapshot
     * holds its own batch, and the other declarer's counter within the same bounds.
     */
    @Test
    void aSnapshotRacingBatchesOnSeveralThreadsIsACutOfWholeBatches() throws Exception {
        int declarers = 2;
        AtomicBoolean stop = new AtomicBoolean();
        // batch writers first, then the declarers' counters: what each started and completed so far
        AtomicLongArray started = new AtomicLongArray(WRITERS + declarers);
        AtomicLongArray completed = new AtomicLongArray(WRITERS + declarers);
        ExecutorService pool = Executors.newFixedThreadPool(WRITERS + declarers);
        record Cut(int declarer, long id, long[] lo, long[] hi, long own) { // own: its writeAndSnapshot's counter, or -1
        }
        List<Cut> cuts = java.util.Collections.synchronizedList(new ArrayList<>());
        try (Varve store = Varve.open(config(RankTreePolicy.keepEverything()))) {
            createTables(store);
            for (int w = 0; w < WRITERS; w++) {
                batch(store, w, 1, group(w));
                started.set(w, 1);
                completed.set(w, 1);
            }
            for (int d = 0; d < declarers; d++) store.write(counter(d, 0));
            List<Future<?>> writers = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                writers.add(pool.submit(() -> {
                    List<Slot> slots = group(writer);
                    for (long s = 2; !stop.get() && s < 1_000_000; s++) {
                        started.set(writer, s);
                        batch(store, writer, s, slots);
                        completed.set(writer, s);
                    }
                    return null;
                }));
            }
            List<Future<?>> declaring = new ArrayList<>();
            for (int d = 0; d < declarers; d++) {
                int declarer = d, own = WRITERS + d;
                declaring.add(pool.submit(() -> {
                    for (long i = 1; i <= 80; i++) {
                        long[] lo = new long[WRITERS + declarers];
                        long[] hi = new long[WRITERS + declarers];
                        for (int x = 0; x < lo.length; x++) lo[x] = completed.get(x);
                        long id;
                        if (i % 2 == 0) {
                            started.set(own, i);
                            id = store.writeAndSnapshot(counter(declarer, i));
                            completed.set(own, i);
                        } else {
                            id = store.snapshotNow();
                        }
                        for (int x = 0; x < hi.length; x++) hi[x] = started.get(x);
                        cuts.add(new Cut(declarer, id, lo, hi, i % 2 == 0 ? i : -1));
                    }
                    return null;
                }));
            }
            awaitAll(declaring, new AtomicBoolean());
            stop.set(true);
            awaitAll(writers, stop);
            for (Cut cut : cuts) {
                try (SnapshotView v = store.asOf(cut.id())) {
                    String what = "snapshot " + cut.id() + " of declarer " + cut.declarer();
                    if (cut.own() >= 0)
                        assertEquals(cut.own(), seq(v.table("own").get(FixtureSupport.utf8("counter" + cut.declarer())), what), what + " lacks its own batch");
                    for (int w = 0; w < WRITERS; w++) checkWholeBatch(v, w, cut.lo()[w], cut.hi()[w], what + ", writer " + w);
                    for (int d = 0; d < declarers; d++) {
                        long got = seq(v.table("own").get(FixtureSupport.utf8("counter" + d)), what + ", counter " + d);
                        long lo = cut.lo()[WRITERS + d], hi = cut.hi()[WRITERS + d];
                        assertTrue(got >= lo && got <= hi, what + ": counter " + d + " holds " + got + " outside [" + lo + ", " + hi + "]");
                    }
                }
            }
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    /** A declarer's batch: its counter set to {@code i}. */
    private static java.util.function.Consumer<WriteBatch> counter(int declarer, long i) {
        return b -> b.put("own", FixtureSupport.utf8("counter" + declarer), value(i));
    }

    private static void checkWholeBatch(SnapshotView v, int w, long lo, long hi, String what) {
        long s = -1;
        for (Slot slot : group(w)) {
            Table t = v.table(slot.table());
            long got = seq(slot.partition() < 0 ? t.get(slot.key()) : t.partition(slot.partition()).get(slot.key()), what + " " + slot.table());
            if (s < 0) s = got;
            assertEquals(s, got, what + ": keys of different batches in one snapshot");
        }
        assertTrue(s >= lo && s <= hi, what + ": batch " + s + " outside [" + lo + ", " + hi + "]");
        for (int i = 0; i < 3; i++) {
            byte[] x = v.table("a").get(rotating(w, i));
            if (i == s % 3) assertEquals(s, seq(x, what + " rotating " + i), what + ": rotating key");
            else assertNull(x, what + ": rotating key " + i + " the batch removed is there");
        }
    }

    /**
     * Raising ranks while declarations drop the snapshots level 1 no longer keeps: each raise either succeeds or says
     * the snapshot is gone, and a snapshot just raised is live (level 2 keeps the last three raised) and reads whole.
     */
    @Test
    void rankRacingRetentionDropsEitherKeepsTheSnapshotOrSaysItIsGone() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong latest = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try (Varve store = Varve.open(config(RankTreePolicy.levels(Retention.keepLast(2), Retention.keepLast(3))))) {
            createTables(store);
            List<Future<?>> tasks = new ArrayList<>();
            tasks.add(pool.submit(() -> {
                List<Slot> slots = group(0);
                for (long s = 1; s <= 600 && !stop.get(); s++) {
                    batch(store, 0, s, slots);
                    latest.set(store.snapshotNow());
                }
                return null;
            }));
            for (int r = 0; r < 2; r++) {
                tasks.add(pool.submit(() -> {
                    int raised = 0;
                    for (int i = 0; i < 2000 && !stop.get(); i++) {
                        long id = latest.get() - (i % 3);
                        if (id < 1) continue;
                        try {
                            store.rank(id, 2);
                        } catch (SnapshotNotFoundException gone) {
                            continue; // level 1 dropped it first: said so
                        }
                        raised++;
                        readIfLive(store, id);
                    }
                    return raised;
                }));
            }
            awaitAll(tasks, stop);
            for (SnapshotInfo s : store.snapshots()) try (SnapshotView v = store.asOf(s.id())) {
                checkWholeBatch(v, 0, 1, Long.MAX_VALUE, "snapshot " + s.id());
            }
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    /**
     * A raise racing the archiver's check of {@code keepFor} ages (run here back to back on another thread, as the
     * archiver runs it about once a second): a snapshot that aged out of level 1 is either raised to level 2, which
     * keeps everything, and stays live, or the raise says it was dropped; never a raise that returns for a snapshot
     * the same moment's check dropped.
     */
    @Test
    void aRaiseRacingAnAgeingDropKeepsTheSnapshotOrSaysItWasDropped() throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Varve store = Varve.open(config(RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(1)), Retention.keepAll())))) {
            Future<?> archiver = pool.submit(() -> {
                while (!stop.get()) store.engine().archive.enforce();
                return null;
            });
            int raised = 0, refused = 0;
            for (int i = 0; i < 4000; i++) {
                long id = store.snapshotNow();
                for (int spin = 0; spin < i % 64 * 20; spin++) Thread.onSpinWait(); // raise at various points of its ageing
                try {
                    store.rank(id, 2);
                } catch (SnapshotNotFoundException dropped) {
                    assertTrue(dropped.getMessage().contains("dropped"), dropped.getMessage());
                    refused++;
                    continue;
                }
                raised++;
                try (SnapshotView v = store.asOf(id)) { // level 2 keeps every raised snapshot
                    assertEquals(id, v.id());
                } catch (SnapshotNotFoundException e) {
                    fail("rank(" + id + ", 2) returned, yet the snapshot is gone: " + e.getMessage() + " (after " + raised + " raises, " + refused + " refused)");
                }
            }
            stop.set(true);
            archiver.get(60, TimeUnit.SECONDS);
            assertTrue(raised > 0 && refused > 0, "the race ran both ways: " + raised + " raised, " + refused + " refused");
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    /** A snapshot raised a moment ago reads whole, unless other raises have since pushed it out of level 2's three. */
    private static void readIfLive(Varve store, long id) {
        SnapshotView v;
        try {
            v = store.asOf(id);
        } catch (SnapshotNotFoundException e) {
            assertTrue(e.getMessage().contains("dropped"), e.getMessage());
            return;
        }
        try (v) {
            checkWholeBatch(v, 0, 1, Long.MAX_VALUE, "raised snapshot " + id);
        }
    }

    /** Waits for every task, failing with the first failure (and stopping the others). */
    static void awaitAll(List<? extends Future<?>> tasks, AtomicBoolean stop) throws Exception {
        try {
            for (Future<?> f : tasks) f.get(90, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            stop.set(true);
            if (e.getCause() instanceof AssertionError a) throw a;
            fail("a concurrent caller failed: " + e.getCause(), e.getCause());
        } finally {
            stop.set(true);
        }
    }
}
