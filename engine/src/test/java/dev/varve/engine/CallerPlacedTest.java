package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.TreeMap;

import static dev.varve.engine.FixtureSupport.assertSameContent;
import static dev.varve.engine.FixtureSupport.drain;
import static dev.varve.engine.FixtureSupport.small;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Tables whose keys the caller places: any key in any partition, kept there across reopen, crash and snapshots. */
@Timeout(60)
class CallerPlacedTest {
    private static final int PARTS = 8;
    private static final TableOptions CALLER = TableOptions.callerPlaced(PARTS);

    @TempDir
    Path dir;

    /** partition -> key -> value: what every partition must hold. */
    private static TreeMap<byte[], byte[]>[] models() {
        @SuppressWarnings({"unchecked", "rawtypes"}) // Java has no generic array creation
        TreeMap<byte[], byte[]>[] m = new TreeMap[PARTS];
        for (int p = 0; p < PARTS; p++) m[p] = FixtureSupport.newModel();
        return m;
    }

    /** The same keys in every partition with per-partition values, some removed, some written by batches. */
    private static TreeMap<byte[], byte[]>[] fill(Varve store) {
        TreeMap<byte[], byte[]>[] model = models();
        Table t = store.table("grid", CALLER);
        for (int i = 0; i < 400; i++) {
            byte[] k = utf8("k" + i);
            int p = i % PARTS;
            byte[] v = utf8("v" + i + "@" + p);
            t.partition(p).put(k, v);
            model[p].put(k, v);
            int q = (p + 3) % PARTS; // the same key again in another partition
            byte[] v2 = utf8("w" + i + "@" + q);
            byte[] idx = utf8("idx" + i);
            store.write(b -> b.put("grid", q, k, v2).put("grid", q, idx, k));
            model[q].put(k, v2);
            model[q].put(idx, k);
            if (i % 7 == 0) {
                assertTrue(t.partition(p).remove(k));
                model[p].remove(k);
            }
        }
        return model;
    }

    private static void check(Table t, TreeMap<byte[], byte[]>[] model) {
        assertEquals(CALLER, t.options());
        for (int p = 0; p < PARTS; p++) {
            Partition part = t.partition(p);
            try (Cursor c = part.scan(null, null)) {
                assertSameContent(model[p], drain(c), "partition " + p);
            }
            assertEquals(model[p].size(), part.size(), "size of partition " + p);
            for (var e : model[p].entrySet()) assertArrayEquals(e.getValue(), part.get(e.getKey()));
        }
    }

    @Test
    void anyKeyGoesToTheNamedPartitionAndStaysThereAfterReopen() {
        TreeMap<byte[], byte[]>[] model;
        try (Varve store = Varve.open(small(dir).build())) {
            model = fill(store);
            check(store.table("grid"), model);
        }
        try (Varve store = Varve.open(small(dir).build())) {
            check(store.table("grid"), model);
            check(store.table("grid", CALLER), model);
        }
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void replayAfterACrashPutsEveryKeyBackInItsPartition(RecoveryMode mode) {
        TreeMap<byte[], byte[]>[] model;
        Varve store = Varve.open(small(dir).recoveryMode(mode).build());
        model = fill(store);
        store.table("grid").partition(5).destroy();
        model[5].clear();
        store.halt(); // nothing flushed: the table's creation and every write come back from the WAL
        try (Varve reopened = Varve.open(small(dir).recoveryMode(mode).build())) {
            assertTrue(reopened.recoveryReport().replayedRecords() > 0, "the crash left records to replay");
            check(reopened.table("grid"), model);
        }
    }

    @Test
    void snapshotViewsReadCallerPlacedPartitions() {
        try (Varve store = Varve.open(small(dir).build())) {
            Table t = store.table("grid", CALLER);
            t.partition(2).put(utf8("a"), utf8("old"));
            long s = store.snapshotNow();
            t.partition(2).put(utf8("a"), utf8("new"));
            t.partition(6).put(utf8("a"), utf8("other"));
            try (SnapshotView past = store.asOf(s)) {
                Table pt = past.table("grid");
                assertEquals(CALLER, pt.options());
                assertArrayEquals(utf8("old"), pt.partition(2).get(utf8("a")));
                assertNull(pt.partition(6).get(utf8("a")));
                assertThrows(IllegalArgumentException.class, () -> pt.get(utf8("a")));
                assertNull(past.table("never").options());
            }
        }
    }

    @Test
    void hashPlacedTablesKeepRejectingKeysOfOtherPartitions() {
        try (Varve store = Varve.open(small(dir).build())) {
            Table t = store.table("h", TableOptions.hashPlaced(6));
            assertEquals(6, t.partitions());
            byte[] k = utf8("key");
            int home = KeyHash.partition(k, 6);
            int other = (home + 1) % 6;
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> t.partition(other).put(k, utf8("v")));
            assertTrue(e.getMessage().contains("belongs to partition " + home), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> store.write(b -> b.put("h", other, k, utf8("v"))));
            store.write(b -> b.put("h", home, k, utf8("v")));
            assertArrayEquals(utf8("v"), t.get(k));
            assertEquals(TableOptions.hashPlaced(4), store.table("plain").options(), "store.table(name) keeps the configured count");
        }
    }

    @Test
    void badInputIsRejectedAndChangesNothing() {
        try (Varve store = Varve.open(small(dir).build())) {
            Table t = store.table("grid", CALLER);
            t.partition(1).put(utf8("k"), utf8("v"));
            assertMessage("out of range", () -> t.partition(PARTS));
            assertMessage("out of range", () -> t.partition(-1));
            assertMessage("caller-placed", () -> t.put(utf8("k"), utf8("v")));
            assertMessage("caller-placed", () -> t.get(utf8("k")));
            assertMessage("caller-placed", () -> t.remove(utf8("k")));
            assertMessage("exists as caller-placed", () -> store.table("grid", TableOptions.hashPlaced(PARTS)));
            assertMessage("exists as caller-placed", () -> store.table("grid", TableOptions.callerPlaced(PARTS + 1)));
            assertMessage("partitions must be in", () -> TableOptions.callerPlaced(0));
            assertMessage("partitions must be in", () -> TableOptions.callerPlaced(TableOptions.MAX_PARTITIONS + 1));
            assertMessage("table options are null", () -> store.table("x", null));
            // a batch with one bad operation writes nothing and creates no table
            assertMessage("caller-placed", () -> store.write(b -> b.put("grid", 1, utf8("k"), utf8("changed")).put("fresh", utf8("a"), utf8("b"))
                    .put("grid", utf8("k"), utf8("v"))));
            assertMessage("out of range", () -> store.write(b -> b.put("grid", 1, utf8("k"), utf8("changed")).put("grid", PARTS, utf8("k"), utf8("v"))));
            assertMessage("does not exist", () -> store.write(b -> b.put("grid", 1, utf8("k"), utf8("changed")).remove("missing", 0, utf8("k"))));
            assertMessage("negative", () -> store.write(b -> b.put("grid", -1, utf8("k"), utf8("v"))));
            assertArrayEquals(utf8("v"), t.partition(1).get(utf8("k")));
            try (Cursor c = t.scan(null, null)) {
                assertEquals(1, drain(c).size());
            }
            try (SnapshotView now = store.asOf(store.snapshotNow())) {
                assertNull(now.table("fresh").options(), "a rejected batch created a table");
            }
        }
    }

    @Test
    void aCatalogEntryOrCreateRecordFromBeforeCallerPlacementReadsAsHashPlaced() {
        byte[] oldEntry = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(3).putInt(16).array();
        assertEquals(TableOptions.hashPlaced(16), Catalog.decode("t", oldEntry).options());
        byte[] name = "t".getBytes(StandardCharsets.UTF_8);
        ByteBuffer oldCreate = ByteBuffer.allocate(12 + name.length).order(ByteOrder.LITTLE_ENDIAN).putInt(3).putInt(16).putInt(name.length).put(name).flip();
        assertEquals(TableOptions.hashPlaced(16), LogicalRecords.decodeCreateTable(oldCreate).options());
        ByteBuffer created = LogicalRecords.encodeCreateTable(3, CALLER, "t");
        assertEquals(CALLER, LogicalRecords.decodeCreateTable(created).options());
    }

    private static void assertMessage(String part, org.junit.jupiter.api.function.Executable e) {
        IllegalArgumentException x = assertThrows(IllegalArgumentException.class, e);
        assertTrue(x.getMessage().contains(part), "expected '" + part + "' in: " + x.getMessage());
    }
}
