package dev.varve.engine;

import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.TreeMap;
import java.util.function.UnaryOperator;

import static dev.varve.engine.FixtureSupport.assertTableHolds;
import static dev.varve.engine.FixtureSupport.bytes;
import static dev.varve.engine.FixtureSupport.newModel;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad arguments, a closed store and bad configs: a clear exception, and nothing stored changes or gets logged. */
@Timeout(300)
class BadInputTest {
    @TempDir
    Path dir;

    private Varve store;
    private Table table;
    private final TreeMap<byte[], byte[]> model = newModel();

    private Varve open() {
        store = Varve.open(FixtureSupport.small(dir).build());
        table = store.table("t");
        return store;
    }

    private void fill() {
        for (int i = 0; i < 200; i++) {
            byte[] k = utf8("k" + i);
            byte[] v = bytes(i, i % 25 == 0 ? 20_000 : 50);
            table.put(k, v);
            model.put(k, v);
        }
    }

    /** Runs a bad call: it must throw {@code type} and leave the WAL, the table and the snapshots exactly as they were. */
    private <T extends Throwable> T rejected(Class<T> type, Executable call, String... mustMention) {
        return FixtureSupport.rejected(store, type, call, mustMention);
    }

    @Test
    void badKeysAndValuesAreRejectedAndChangeNothing() {
        open();
        fill();
        int max = store.maxKeyBytes();
        assertTrue(max >= 1024, "documented maximum of at least 1 KiB");
        byte[] k = utf8("k1");
        byte[] v = bytes(1, 10);

        rejected(IllegalArgumentException.class, () -> table.put(null, v), "key");
        rejected(IllegalArgumentException.class, () -> table.put(k, null), "value");
        rejected(IllegalArgumentException.class, () -> table.get(null), "key");
        rejected(IllegalArgumentException.class, () -> table.remove(null), "key");
        byte[] longKey = new byte[max + 1];
        rejected(IllegalArgumentException.class, () -> table.put(longKey, v), String.valueOf(max + 1), String.valueOf(max));
        rejected(IllegalArgumentException.class, () -> table.get(longKey), String.valueOf(max + 1), String.valueOf(max));
        rejected(IllegalArgumentException.class, () -> table.remove(longKey), String.valueOf(max + 1), String.valueOf(max));
        byte[] bigValue = new byte[Varve.MAX_VALUE_BYTES + 1];
        rejected(IllegalArgumentException.class, () -> table.put(k, bigValue), String.valueOf(Varve.MAX_VALUE_BYTES + 1),
                String.valueOf(Varve.MAX_VALUE_BYTES));
        // bad keys through a partition view, and through a batch
        Partition p0 = table.partition(0);
        rejected(IllegalArgumentException.class, () -> p0.put(null, v));
        rejected(IllegalArgumentException.class, () -> p0.put(longKey, v), String.valueOf(max));
        rejected(IllegalArgumentException.class, () -> store.write(b -> b.put("t", longKey, v)), String.valueOf(max));
        rejected(IllegalArgumentException.class, () -> store.write(b -> b.put("t", k, bigValue)), String.valueOf(Varve.MAX_VALUE_BYTES));
        assertTableHolds(table, model, "after rejected keys and values");

        // the limits themselves are accepted
        byte[] maxKey = bytes(7, max);
        byte[] maxValue = bytes(8, Varve.MAX_VALUE_BYTES);
        table.put(maxKey, maxValue);
        model.put(maxKey, maxValue);
        table.put(new byte[0], new byte[0]);
        model.put(new byte[0], new byte[0]);
        assertTableHolds(table, model, "after limit-size writes");
        store.close();
        open();
        assertTableHolds(table, model, "after reopen");
        store.close();
    }

    @Test
    void badTableNamesAndPartitionsAreRejected() {
        open();
        fill();
        rejected(IllegalArgumentException.class, () -> store.table(""), "255");
        rejected(IllegalArgumentException.class, () -> store.table(null));
        String tooLong = "x".repeat(256);
        rejected(IllegalArgumentException.class, () -> store.table(tooLong), "256", "255");
        String tooLongUtf8 = "\u00e9".repeat(128); // 128 chars, 256 UTF-8 bytes
        rejected(IllegalArgumentException.class, () -> store.table(tooLongUtf8), "256");
        String threeByteChars = "\u20ac".repeat(86); // 86 chars, 258 UTF-8 bytes: past the names short enough to skip encoding
        rejected(IllegalArgumentException.class, () -> store.table(threeByteChars), "258");
        rejected(IllegalArgumentException.class, () -> store.write(b -> b.put(threeByteChars, utf8("k"), utf8("v"))), "258");
        // a lone surrogate has no UTF-8 encoding: "a\uD800" would be catalogued as "a?", over that table's entry
        rejected(IllegalArgumentException.class, () -> store.table("a\uD800"), "surrogate");
        rejected(IllegalArgumentException.class, () -> store.table("\uDC00b"), "surrogate");
        rejected(IllegalArgumentException.class, () -> store.write(b -> b.put("a\uD800", utf8("k"), utf8("v"))), "surrogate");
        assertNotNull(store.table("pair \uD83D\uDE00")); // a well-formed pair is a character like any other
        rejected(IllegalArgumentException.class, () -> table.partition(-1), "-1");
        rejected(IllegalArgumentException.class, () -> table.partition(4), "4");
        rejected(IllegalArgumentException.class, () -> table.partition(Integer.MAX_VALUE));

        // a key that hashes elsewhere is refused by another partition's view: put, get, remove
        byte[] k = utf8("k7");
        int home = -1;
        for (int p = 0; p < table.partitions(); p++) {
            try {
                table.partition(p).get(k);
                home = p;
            } catch (IllegalArgumentException expected) {
                // not this partition
            }
        }
        assertTrue(home >= 0, "exactly one partition accepts the key");
        Partition other = table.partition((home + 1) % table.partitions());
        rejected(IllegalArgumentException.class, () -> other.put(k, bytes(99, 10)), "partition " + home);
        rejected(IllegalArgumentException.class, () -> other.remove(k), "partition " + home);
        rejected(IllegalArgumentException.class, () -> other.get(k), "partition " + home);
        assertArrayEquals(model.get(k), table.partition(home).get(k));
        assertTableHolds(table, model, "after rejected partition writes");

        // a legal name of exactly 255 bytes works
        Table edge = store.table("y".repeat(255));
        edge.put(k, k);
        assertArrayEquals(k, edge.get(k));
        assertEquals(2, countTables());
        store.close();
        open();
        assertTableHolds(table, model, "after reopen");
        assertArrayEquals(k, store.table("y".repeat(255)).get(k));
        store.close();
    }

    private int countTables() {
        int n = 0;
        for (String name : new String[]{"t", "y".repeat(255), "", "x".repeat(256)}) {
            try {
                if (!name.isEmpty() && name.length() <= 255) {
                    store.table(name);
                    n++;
                }
            } catch (IllegalArgumentException ignored) {
                // not a table
            }
        }
        return n;
    }

    @Test
    void closedStoreRefusesEverything() {
        open();
        fill();
        for (int i = 0; i < 1000; i++) { // more than one cursor batch (128) per partition
            byte[] k = utf8("extra" + i);
            table.put(k, k);
            model.put(k, k);
        }
        Partition p0 = table.partition(0);
        Cursor open = table.scan(null, null);
        assertTrue(open.next());
        store.close();
        long wal = store.metrics().walBytesWritten(); // the close's own checkpoint logs too; nothing refused may
        store.close(); // idempotent
        byte[] k = utf8("k1");
        byte[] v = bytes(1, 10);
        assertThrows(IllegalStateException.class, () -> store.table("t"));
        assertThrows(IllegalStateException.class, () -> store.table("new"));
        assertThrows(IllegalStateException.class, () -> table.put(k, v));
        assertThrows(IllegalStateException.class, () -> table.get(k));
        assertThrows(IllegalStateException.class, () -> table.remove(k));
        assertThrows(IllegalStateException.class, () -> table.scan(null, null));
        assertThrows(IllegalStateException.class, () -> p0.put(firstKeyOf(p0Keys()), v));
        byte[] elsewhere = model.keySet().stream().filter(x -> KeyHash.partition(x, 4) != 0).findFirst().orElseThrow();
        assertThrows(IllegalStateException.class, () -> p0.put(elsewhere, v), "a closed store says so, not that the key belongs elsewhere");
        assertThrows(IllegalStateException.class, () -> p0.size());
        assertThrows(IllegalStateException.class, () -> p0.destroy());
        assertThrows(IllegalStateException.class, () -> p0.scan(null, null));
        assertThrows(IllegalStateException.class, () -> store.write(b -> b.put("t", k, v)));
        assertThrows(IllegalStateException.class, () -> store.checkpoint());
        assertThrows(IllegalStateException.class, () -> {
            while (open.next()) {
                open.value();
            }
        }, "a cursor opened before close must not read pages after it (entries it copied before may still be served)");
        assertEquals(wal, store.metrics().walBytesWritten());
        open();
        assertTableHolds(table, model, "after reopen");
        store.close();
    }

    private TreeMap<byte[], byte[]> p0Keys() {
        TreeMap<byte[], byte[]> m = newModel();
        for (var e : model.entrySet()) if (KeyHash.partition(e.getKey(), 4) == 0) m.put(e.getKey(), e.getValue());
        return m;
    }

    private static byte[] firstKeyOf(TreeMap<byte[], byte[]> m) {
        return m.firstKey();
    }

    @Test
    void aBatchOrACursorUsedPastItsEndIsRefused() {
        open();
        fill();
        WriteBatch[] escaped = new WriteBatch[1];
        store.write(b -> {
            escaped[0] = b;
            b.put("t", utf8("in"), utf8("v"));
        });
        model.put(utf8("in"), utf8("v"));
        rejected(IllegalStateException.class, () -> escaped[0].put("t", utf8("late"), utf8("v")), "already written");
        assertTableHolds(table, model, "after an operation added to a written batch");
        Cursor c = table.partition(0).scan(null, null);
        while (c.next()) {
            c.key();
        }
        assertThrows(IllegalStateException.class, c::key, "a partition cursor past its end has no current entry");
        assertThrows(IllegalStateException.class, c::value);
        assertTrue(!c.next());
        c.close();
        try (SnapshotView view = store.asOf(store.snapshotNow())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> view.table(""));
            assertTrue(e.getMessage().contains("table name"), e.getMessage());
        }
        store.close();
        assertThrows(IllegalStateException.class, () -> table.partition(0));
    }

    /**
     * A child JVM whose direct memory cannot hold the data region: open is refused naming {@code dataRegionSize},
     * not with a bare {@code OutOfMemoryError}, and before it creates the store's directory.
     */
    @Test
    void aRegionTheJvmCannotAllocateIsRefusedNamingTheSetting() {
        FixtureChildJvm.Result r = FixtureChildJvm.run("-XX:MaxDirectMemorySize=32m", 90, TooLargeRegion.class, dir.resolve("store").toString());
        assertEquals(0, r.exitCode(), r::describe);
        assertTrue(r.output().contains("REFUSED dataRegionSize of 268435456 bytes cannot be allocated (the JVM's limit on direct memory is 33554432 bytes)"),
                r::describe);
        assertFalse(r.output().contains("CREATED"), r::describe);
    }

    /**
     * Buffers that each fit under the JVM's limit on direct memory but not together: refused naming them all, before
     * the store's directory is created (it was refused when the last of them was allocated, leaving the directory).
     */
    @Test
    void buffersTheJvmCannotHoldTogetherAreRefusedBeforeTheStoreIsCreated() {
        FixtureChildJvm.Result r = FixtureChildJvm.run("-XX:MaxDirectMemorySize=32m", 90, TooLargeRegion.class, dir.resolve("store").toString(), "sum");
        assertEquals(0, r.exitCode(), r::describe);
        assertTrue(r.output().contains("REFUSED direct memory of 41943040 bytes in all (dataRegionSize 16777216 + checkpointBufferSize 8388608 + "
                + "captureBufferSize 16777216) cannot be allocated"), r::describe);
        assertFalse(r.output().contains("CREATED"), r::describe);
    }

    /**
     * Likewise FSYNC's staging copy of the WAL segment (direct memory of walSegmentSize bytes), when what the JVM
     * already holds leaves too little (the open's buffers alone fit under the limit, so only the allocation can tell):
     * refused naming the setting, and the segment file the open had opened is closed again.
     */
    @Test
    void anFsyncSegmentTheJvmCannotStageIsRefusedNamingTheSetting() {
        FixtureChildJvm.Result r = FixtureChildJvm.run("-XX:MaxDirectMemorySize=100m", 90, TooLargeRegion.class, dir.resolve("store").toString(),
                "walSegmentSize");
        assertEquals(0, r.exitCode(), r::describe);
        assertTrue(r.output().contains("REFUSED walSegmentSize of 67108864 bytes cannot be allocated"), r::describe);
        assertFalse(r.output().contains("STILL OPEN"), r::describe);
    }

    /** Child JVM main for the three tests above: args {@code dir [sum | walSegmentSize]}. */
    public static final class TooLargeRegion {
        /** Direct memory the JVM holds before the open, in the walSegmentSize case. */
        static java.nio.ByteBuffer ballast;

        public static void main(String[] args) throws java.io.IOException {
            VarveConfig.Builder b = VarveConfig.builder().path(Path.of(args[0])).dataRegionSize(256L << 20);
            if (args.length > 1 && args[1].equals("sum")) b.dataRegionSize(16L << 20).checkpointBufferSize(8L << 20).captureBufferSize(16L << 20);
            if (args.length > 1 && args[1].equals("walSegmentSize")) {
                b.dataRegionSize(16L << 20).checkpointBufferSize(1L << 20).captureBufferSize(1L << 20)
                        .walSyncMode(dev.varve.config.WalSyncMode.FSYNC).walSegmentSize(64L << 20);
                ballast = java.nio.ByteBuffer.allocateDirect(30 << 20);
            }
            try {
                Varve.open(b.build()).close();
                System.out.println("OPENED");
            } catch (IllegalArgumentException e) {
                System.out.println("REFUSED " + e.getMessage());
            }
            if (java.nio.file.Files.exists(Path.of(args[0]))) System.out.println("CREATED " + args[0]);
            if (!java.nio.file.Files.isDirectory(Path.of("/proc/self/fd"))) return; // Linux only
            try (var fds = java.nio.file.Files.list(Path.of("/proc/self/fd"))) {
                for (Path fd : fds.toList()) {
                    try {
                        if (java.nio.file.Files.readSymbolicLink(fd).toString().contains(args[0])) System.out.println("STILL OPEN " + fd);
                    } catch (java.io.IOException gone) {
                        // the listing's own descriptor
                    }
                }
            }
        }
    }

    @Test
    void secondOpenOfTheSameDirectoryIsRefused() {
        open();
        fill();
        assertThrows(IllegalStateException.class, () -> Varve.open(FixtureSupport.small(dir).build()));
        assertTableHolds(table, model, "after a refused second open");
        store.close();
    }

    /** The tools' entry points name a null argument instead of failing deep inside with a NullPointerException. */
    @Test
    void theToolsEntryPointsNameANullArgument() {
        open();
        fill();
        VarveConfig layout = store.config();
        long snapshot = store.snapshotNow();
        nullNamed("target", () -> IncomingStore.prepare(null));
        nullNamed("target", () -> IncomingStore.checkTarget(null));
        nullNamed("dir", () -> StoreInspector.detectConfig(null));
        nullNamed("archiveDir", () -> StoreInspector.detectConfig(dir, null));
        nullNamed("store", () -> StoreInspector.snapshots(null));
        nullNamed("config", () -> StoreInspector.checkFiles(null));
        nullNamed("config", () -> StoreInspector.lastCheckpoint(null));
        nullNamed("config", () -> WalInspector.range(null));
        nullNamed("out", () -> WalInspector.read(layout, 0, null, damage -> { }));
        nullNamed("unread", () -> WalInspector.read(layout, 0, r -> true, null));
        nullNamed("sink", () -> StoreSalvager.salvage(layout, null));
        nullNamed("config", () -> StoreVerifier.verify((VarveConfig) null));
        nullNamed("store", () -> StoreVerifier.verify((Varve) null));
        try (SnapshotImage image = SnapshotImage.open(store, snapshot)) {
            nullNamed("dst", () -> image.next(null));
        }
        store.close();
    }

    /**
     * The offline inspectors given a directory that holds no store (a mistyped path, an empty directory) refuse it, as
     * {@code detectConfig} and {@code openReadOnly} do: they answered as for an empty, sound store (no file, no damage,
     * no checkpoint, an empty WAL), which a health check took for a clean store.
     */
    @Test
    void theOfflineInspectorsRefuseADirectoryWithoutAStore() throws java.io.IOException {
        java.nio.file.Files.createDirectories(dir.resolve("empty"));
        for (Path notAStore : new Path[]{dir.resolve("missing"), dir.resolve("empty")}) {
            VarveConfig c = FixtureSupport.small(notAStore).build();
            java.util.List<Executable> calls = java.util.List.of(() -> StoreInspector.checkFiles(c), () -> StoreInspector.lastCheckpoint(c),
                    () -> StoreInspector.recoveryFilesOnDisk(c), () -> WalInspector.range(c), () -> WalInspector.read(c, 0, r -> true, d -> { }));
            for (Executable call : calls) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
                assertTrue(e.getMessage().contains("holds no Varve store"), e.getMessage());
            }
            String unusable = StoreVerifier.verify(c).unusable(); // the verifier still reports, as before
            assertTrue(unusable != null && unusable.contains("holds no Varve store"), unusable);
        }
        assertFalse(java.nio.file.Files.exists(dir.resolve("missing")), "a refused directory is not created");
    }

    private static void nullNamed(String argument, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertEquals(argument + " must not be null", e.getMessage());
    }

    @Test
    void invalidConfigNamesTheField() {
        check("path", b -> b.path(null));
        check("pageSize", b -> b.pageSize(3000));
        check("pageSize", b -> b.pageSize(512));
        check("pageSize", b -> b.pageSize(65536));
        check("dataRegionSize", b -> b.dataRegionSize(1L << 20));
        check("dataRegionSize", b -> b.pageSize(16384).dataRegionSize(16L << 20)); // 1024 pages < 2048
        check("dataRegionSize", b -> b.dataRegionSize((8L << 20) + 1000));
        check("partitions", b -> b.partitions(0));
        check("partitions", b -> b.partitions(100_000));
        check("walSegmentSize", b -> b.walSegmentSize(1L << 20));
        check("walSegmentSize", b -> b.walSegmentSize((4L << 20) + 100));
        check("checkpointFrequency", b -> b.checkpointFrequency(Duration.ZERO));
        check("checkpointFrequency", b -> b.checkpointFrequency(null));
        check("checkpointThreads", b -> b.checkpointThreads(0));
        check("recoveryThreads", b -> b.recoveryThreads(0));
        check("checkpointBufferSize", b -> b.checkpointBufferSize(1000));
        check("recoveryMode", b -> b.recoveryMode(null));
        check("walSyncMode", b -> b.walSyncMode(null));
        check("recoveryCompression", b -> b.recoveryCompression(null));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> VarveConfig.load(null));
        assertTrue(e.getMessage().contains("properties file"), e.getMessage());
    }

    private void check(String field, UnaryOperator<VarveConfig.Builder> change) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> change.apply(FixtureSupport.small(dir)).build(),
                "invalid " + field);
        assertTrue(e.getMessage() != null && e.getMessage().contains(field), "message names " + field + ": " + e.getMessage());
    }
}
