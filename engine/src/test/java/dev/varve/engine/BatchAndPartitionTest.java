package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.spi.RecordTypes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static dev.varve.engine.FixtureSupport.assertTableHolds;
import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.drain;
import static dev.varve.engine.FixtureSupport.newModel;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Atomic multi-table batches and partition destroy: all-or-nothing, across close/reopen and a crash. */
@Timeout(300)
class BatchAndPartitionTest {
    private static final String[] TABLES = {"a", "b", "c"};

    @TempDir
    Path dir;

    private VarveConfig config() {
        return FixtureSupport.small(dir).build();
    }

    private static byte[] num(long n) {
        return ByteBuffer.allocate(8).putLong(n).array();
    }

    private static long num(byte[] b) {
        return b == null ? 0 : ByteBuffer.wrap(b).getLong();
    }

    /** A batch writes the same counter to key x of table a and key y of table b: a reader never sees b behind a. */
    @Test
    void multiTableBatchIsVisibleAllOrNothing() throws Exception {
        try (Varve store = Varve.open(config())) {
            Table a = store.table("a");
            Table b = store.table("b");
            Table c = store.table("c");
            byte[] x = utf8("x");
            byte[] y = utf8("y");
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            java.util.concurrent.atomic.AtomicLongArray checks = new java.util.concurrent.atomic.AtomicLongArray(2);
            List<Thread> readers = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                int id = r;
                Thread t = new Thread(() -> {
                    try {
                        while (!stop.get()) {
                            // whichever is read first, the second read must see at least the same batch
                            if (id == 0) {
                                long va = num(a.get(x));
                                long vb = num(b.get(y));
                                if (vb < va) throw new AssertionError("saw a's batch " + va + " but b still at " + vb);
                            } else {
                                long vb = num(b.get(y));
                                long va = num(a.get(x));
                                if (va < vb) throw new AssertionError("saw b's batch " + vb + " but a still at " + va);
                            }
                            checks.incrementAndGet(id);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                t.start();
                readers.add(t);
            }
            // the writer starts once both readers are reading: on a loaded machine it could otherwise finish first
            while ((checks.get(0) == 0 || checks.get(1) == 0) && failure.get() == null) Thread.onSpinWait();
            int batches = 3000;
            for (int i = 1; i <= batches && failure.get() == null; i++) {
                long n = i;
                byte[] prev = utf8("r" + (i - 1));
                byte[] cur = utf8("r" + i);
                store.write(w -> w.put("a", x, num(n)).put("c", cur, num(n)).remove("c", prev).put("b", y, num(n)));
            }
            stop.set(true);
            for (Thread t : readers) t.join(10_000);
            if (failure.get() != null) throw new AssertionError("batch seen half-applied", failure.get());
            assertEquals(batches, num(a.get(x)));
            assertEquals(batches, num(b.get(y)));
            TreeMap<byte[], byte[]> onlyLast = newModel();
            onlyLast.put(utf8("r" + batches), num(batches));
            assertTableHolds(c, onlyLast, "removes of the batches applied too");
        }
    }

    @Test
    void batchWithOneBadOpIsRejectedEntirely() {
        try (Varve store = Varve.open(config())) {
            TreeMap<byte[], byte[]> ma = newModel();
            TreeMap<byte[], byte[]> mb = newModel();
            Table a = store.table("a");
            Table b = store.table("b");
            for (int i = 0; i < 100; i++) {
                a.put(utf8("k" + i), bytes(i, 30));
                ma.put(utf8("k" + i), bytes(i, 30));
                b.put(utf8("k" + i), bytes(-i, 30));
                mb.put(utf8("k" + i), bytes(-i, 30));
            }
            byte[] v = bytes(5, 40);
            byte[] tooLong = new byte[store.maxKeyBytes() + 1];
            byte[] tooBig = new byte[Varve.MAX_VALUE_BYTES + 1];
            List<java.util.function.Consumer<WriteBatch>> bad = List.of(
                    w -> w.put("a", utf8("new1"), v).remove("b", utf8("k1")).put("a", null, v),
                    w -> w.put("a", utf8("new1"), v).put("b", utf8("k2"), null),
                    w -> w.remove("a", utf8("k3")).put("b", tooLong, v),
                    w -> w.put("a", utf8("new1"), v).put("b", utf8("k4"), tooBig),
                    w -> w.put("a", utf8("new1"), v).remove("b", null),
                    w -> w.put("a", utf8("new1"), v).put("", utf8("k5"), v),
                    w -> w.put("a", utf8("new1"), v).put(null, utf8("k5"), v),
                    w -> {
                        w.put("a", utf8("new1"), v).remove("b", utf8("k6"));
                        throw new IllegalStateException("the application gives up half-way");
                    });
            for (var batch : bad) {
                long wal = store.metrics().walBytesWritten();
                long writes = store.metrics().writes();
                RuntimeException e = assertThrows(RuntimeException.class, () -> store.write(batch));
                assertTrue(e instanceof IllegalArgumentException || e instanceof IllegalStateException, e.toString());
                assertEquals(wal, store.metrics().walBytesWritten(), "a rejected batch logged something: " + e);
                assertEquals(writes, store.metrics().writes());
            }
            assertTableHolds(a, ma, "table a after rejected batches");
            assertTableHolds(b, mb, "table b after rejected batches");
            // the WAL record limit (4 MiB segments here): too large a batch is refused before anything is logged
            long wal = store.metrics().walBytesWritten();
            byte[] big = new byte[Varve.MAX_VALUE_BYTES];
            assertThrows(IllegalArgumentException.class, () -> store.write(w -> {
                for (int i = 0; i < 5; i++) w.put("a", utf8("big" + i), big);
            }));
            assertEquals(wal, store.metrics().walBytesWritten());
            assertTableHolds(a, ma, "table a after an oversized batch");
        }
    }

    /**
     * A batch whose bad op comes after a put to a table that does not exist yet must not leave that table behind:
     * the rejected batch logs nothing.
     */
    @Test
    void rejectedBatchCreatesNoTable() {
        try (Varve store = Varve.open(config())) {
            store.table("a").put(utf8("k"), utf8("v"));
            long wal = store.metrics().walBytesWritten();
            assertThrows(IllegalArgumentException.class,
                    () -> store.write(w -> w.put("fresh", utf8("k"), utf8("v")).put("a", null, utf8("v"))));
            assertEquals(wal, store.metrics().walBytesWritten(), "a rejected batch logged the creation of table 'fresh'");
        }
    }

    /**
     * A remove from a table that does not exist removes nothing and creates no table (it did: logged, and there after
     * a reopen); a put beside it in the same batch creates the table, and a remove after that put applies.
     */
    @Test
    void aRemoveFromAMissingTableCreatesNone() {
        try (Varve store = Varve.open(config())) {
            store.table("a").put(utf8("k"), utf8("v"));
            long wal = store.metrics().walBytesWritten();
            store.write(w -> w.remove("ghost", utf8("k")));
            assertEquals(List.of("a"), store.tables());
            assertEquals(wal, store.metrics().walBytesWritten(), "nothing to log");
            store.write(w -> w.remove("ghost", utf8("k")).remove("a", utf8("k")));
            assertEquals(List.of("a"), store.tables());
            assertNull(store.table("a").get(utf8("k")), "the batch's other remove applied");
            store.write(w -> w.remove("made", utf8("x")).put("made", utf8("x"), utf8("1")).put("made", utf8("y"), utf8("2")).remove("made", utf8("y")));
            assertEquals(List.of("a", "made"), store.tables());
            assertArrayEquals(utf8("1"), store.table("made").get(utf8("x")));
            assertNull(store.table("made").get(utf8("y")), "a remove after the put that made its table applies");
        }
        try (Varve store = Varve.open(config())) {
            assertEquals(List.of("a", "made"), store.tables(), "no ghost table after a reopen");
        }
    }

    /** Batches and a destroy survive close/reopen and a crash (halt, then reopen: LOG_ONLY keeps the mapped WAL). */
    @Test
    void batchesSurviveCloseAndCrash() throws IOException {
        TreeMap<String, TreeMap<byte[], byte[]>> model = new TreeMap<>();
        for (String t : TABLES) model.put(t, newModel());
        try (Varve store = Varve.open(config())) {
            applyBatches(store, model, 0, 300);
        }
        try (Varve store = Varve.open(config())) {
            for (String t : TABLES) assertTableHolds(store.table(t), model.get(t), "reopened " + t);
            applyBatches(store, model, 300, 600);
        }
        Varve crashed = Varve.open(config());
        applyBatches(crashed, model, 600, 900);
        crashed.halt();
        try (Varve store = Varve.open(config())) {
            assertTrue(store.recoveryReport().replayedRecords() >= 300, store.recoveryReport().toString());
            for (String t : TABLES) assertTableHolds(store.table(t), model.get(t), "after crash " + t);
        }
    }

    /** A batch of two 800 KiB values (1.6 MiB, within the WAL record limit) is accepted, and must survive a crash. */
    @Test
    void largeBatchSurvivesCrash() {
        TreeMap<String, TreeMap<byte[], byte[]>> model = new TreeMap<>();
        for (String t : TABLES) model.put(t, newModel());
        Varve crashed = Varve.open(config());
        byte[] v1 = bytes(1, 800 << 10);
        byte[] v2 = bytes(2, 800 << 10);
        crashed.write(w -> w.put("a", utf8("big1"), v1).put("b", utf8("big2"), v2));
        model.get("a").put(utf8("big1"), v1);
        model.get("b").put(utf8("big2"), v2);
        crashed.halt();
        try (Varve store = Varve.open(config())) {
            for (String t : new String[]{"a", "b"}) assertTableHolds(store.table(t), model.get(t), "after crash " + t);
        }
    }

    /** The last batch torn in the WAL: none of its operations survive, all earlier batches do. */
    @Test
    void tornLastBatchIsLostEntirely() throws IOException {
        TreeMap<String, TreeMap<byte[], byte[]>> model = new TreeMap<>();
        for (String t : TABLES) model.put(t, newModel());
        // written under FSYNC: the segment records the mode its tail is judged by, whichever mode reopens it
        Varve crashed = Varve.open(config().toBuilder().walSyncMode(dev.varve.config.WalSyncMode.FSYNC).build());
        applyBatches(crashed, model, 0, 200);
        TreeMap<String, TreeMap<byte[], byte[]>> before = new TreeMap<>();
        for (String t : TABLES) before.put(t, new TreeMap<>(model.get(t)));
        applyBatches(crashed, model, 200, 201);
        crashed.halt();
        FixtureSupport.WalRecord last = FixtureSupport.lastWalRecord(dir);
        assertEquals(RecordTypes.DATA_BATCH, last.type());
        FixtureSupport.zero(last.file(), last.offset() + last.length() - 16, 16);
        // a record with its length but not its whole body is what power loss leaves of the group being forced:
        // a torn tail of an FSYNC segment (of a LOG_ONLY one it is damage, see DamageRefusalTest), cut by any open
        try (Varve store = Varve.open(config())) {
            assertNotNull(store.recoveryReport().walTailCut());
            for (String t : TABLES) assertTableHolds(store.table(t), before.get(t), "after a torn batch " + t);
        }
    }

    /** Batch i: puts in every table, a remove of an older key, some overflow values. */
    private static void applyBatches(Varve store, TreeMap<String, TreeMap<byte[], byte[]>> model, int from, int to) {
        for (int i = from; i < to; i++) {
            int n = i;
            List<Object[]> ops = new ArrayList<>();
            for (String t : TABLES) {
                byte[] k = utf8(t + "-" + n % 250);
                byte[] v = bytes(n * 31L + t.hashCode(), n % 17 == 0 ? 9000 : 20 + n % 200);
                ops.add(new Object[]{t, k, v});
                if (n % 5 == 0) ops.add(new Object[]{t, utf8(t + "-" + (n * 7) % 250), null});
            }
            store.write(w -> {
                for (Object[] op : ops) {
                    if (op[2] == null) w.remove((String) op[0], (byte[]) op[1]);
                    else w.put((String) op[0], (byte[]) op[1], (byte[]) op[2]);
                }
            });
            for (Object[] op : ops) {
                if (op[2] == null) model.get((String) op[0]).remove((byte[]) op[1]);
                else model.get((String) op[0]).put((byte[]) op[1], (byte[]) op[2]);
            }
        }
    }

    // ---------------------------------------------------------------- destroy

    private static TreeMap<byte[], byte[]>[] fillPartitions(Table t, int keys, long seed) {
        @SuppressWarnings({"unchecked", "rawtypes"}) // Java has no generic array creation
        TreeMap<byte[], byte[]>[] parts = new TreeMap[t.partitions()];
        for (int p = 0; p < parts.length; p++) parts[p] = newModel();
        for (int i = 0; i < keys; i++) {
            byte[] k = utf8("key" + i);
            byte[] v = bytes(seed + i, i % 10 == 0 ? 6000 : 100 + i % 400);
            t.put(k, v);
            parts[KeyHash.partition(k, parts.length)].put(k, v);
        }
        return parts;
    }

    private static void assertPartitions(Table t, TreeMap<byte[], byte[]>[] parts, String what) {
        TreeMap<byte[], byte[]> all = newModel();
        for (int p = 0; p < parts.length; p++) {
            FixtureSupport.assertSameContent(parts[p], drain(t.partition(p).scan(null, null)), what + ": partition " + p);
            assertEquals(parts[p].size(), t.partition(p).size(), what + ": size of partition " + p);
            all.putAll(parts[p]);
        }
        assertTableHolds(t, all, what);
    }

    @Test
    void destroyEmptiesOnlyThatPartitionAndReusesItsPages() throws IOException {
        TreeMap<byte[], byte[]>[] parts;
        long sizeFull;
        Path p2 = FixtureSupport.pageFile(dir, 1, 2);
        try (Varve store = Varve.open(config())) {
            Table t = store.table("d");
            parts = fillPartitions(t, 2000, 0);
            store.checkpoint().join();
            sizeFull = Files.size(p2);
            TreeMap<byte[], byte[]> saved = parts[2];

            t.partition(2).destroy();
            parts[2] = newModel();
            assertEquals(0, t.partition(2).size());
            for (byte[] k : saved.keySet()) assertNull(t.get(k), "destroyed key still readable");
            assertPartitions(t, parts, "after destroy");

            // the same data again: pages come off the free list, the file hardly grows
            for (var e : saved.entrySet()) t.partition(2).put(e.getKey(), e.getValue());
            parts[2] = saved;
            store.checkpoint().join();
            long sizeRefilled = Files.size(p2);
            assertTrue(sizeRefilled <= sizeFull + sizeFull / 10 + 8 * 4096,
                    "re-inserting the destroyed data grew the page file from " + sizeFull + " to " + sizeRefilled + " bytes");
            assertPartitions(t, parts, "after refill");

            t.partition(2).destroy();
            parts[2] = newModel();
            t.partition(1).destroy();
            parts[1] = newModel();
        }
        try (Varve store = Varve.open(config())) {
            Table t = store.table("d");
            assertPartitions(t, parts, "after close/reopen");
            // refill partition 1, destroy partition 3, crash
            TreeMap<byte[], byte[]>[] again = fillPartitions(t, 2000, 77);
            parts[1] = again[1];
            parts[2] = again[2];
            parts[0] = again[0];
            parts[3] = again[3];
            t.partition(3).destroy();
            parts[3] = newModel();
            store.halt();
        }
        try (Varve store = Varve.open(config())) {
            assertTrue(store.recoveryReport().replayedRecords() > 0);
            assertPartitions(store.table("d"), parts, "after crash");
            assertTrue(Files.size(p2) <= sizeFull + sizeFull / 10 + 8 * 4096, "partition 2 grew to " + Files.size(p2));
        }
    }

    /**
     * Destroying a partition that holds more pages than the data region must work like any other. Runs in a child JVM
     * because a hang there holds the checkpoint read lock (close and halt would wait for it).
     */
    @Test
    void destroyOfAPartitionLargerThanTheDataRegion() {
        FixtureChildJvm.Result r = FixtureChildJvm.run("-Xmx256m", 90, FixtureDestroyLarge.class, dir.resolve("store").toString());
        assertTrue(r.exitCode() == 0 && r.output().contains("DESTROY-OK"), r.describe());
    }
}
