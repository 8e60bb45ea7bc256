package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A WAL_PHYSICAL checkpoint interrupted with more pages than the data region of the next open holds (the store
 * reopened with a smaller dataRegionSize): its pages are restored from the physical records in page memory, which
 * no checkpoint cleans while the store opens. The restore used to wait 120 s for a clean page to evict and fail the
 * open ("is the checkpointer stuck or failed?"); it writes out what it restored so far instead — and a crash in
 * the middle of that restore, after such a write, still recovers every write; a read-only open restores the same
 * way without changing a file.
 */
@Timeout(300)
class PhysicalRestoreSmallRegionTest {
    private static final int KEYS = 12_000;

    @TempDir
    Path dir;

    private VarveConfig config(long region) {
        return VarveConfig.builder().path(dir).dataRegionSize(region).partitions(4).recoveryMode(RecoveryMode.WAL_PHYSICAL)
                .walSyncMode(WalSyncMode.LOG_ONLY).checkpointFrequency(Duration.ofHours(1)).checkpointDirtyRatio(0.95)
                .checkpointWalVolume(1L << 30).build();
    }

    private static byte[] key(int k) {
        return String.format("key-%06d", k).getBytes();
    }

    private static byte[] value(int k) {
        byte[] v = new byte[2000];
        Arrays.fill(v, (byte) k);
        v[0] = (byte) (k >>> 8);
        return v;
    }

    /** ~12,000 dirty pages (47 MiB) in a 64 MiB region, then a checkpoint that stops before its end marker, then a crash. */
    private void interruptedCheckpointOfManyPages() throws Exception {
        NoEndMarker io = new NoEndMarker();
        Varve store = Varve.open(config(64L << 20), io);
        Table t = store.table("t");
        for (int k = 0; k < KEYS; k++) t.put(key(k), value(k));
        io.armed = true;
        assertThrows(ExecutionException.class, () -> store.checkpoint().get());
        store.halt();
    }

    private void checkAll(Varve store) {
        Table t = store.table("t");
        for (int k = 0; k < KEYS; k++) assertArrayEquals(value(k), t.get(key(k)), "key " + k);
        long n = 0;
        try (Cursor c = t.scan(null, null)) {
            while (c.next()) n++;
        }
        assertEquals(KEYS, n);
    }

    @Test
    void restoreOfMorePagesThanTheRegionHoldsWritesThemOut() throws Exception {
        interruptedCheckpointOfManyPages();
        try (Varve store = Varve.open(config(8L << 20))) {
            assertEquals("physical wal", store.recoveryReport().restoredFrom());
            assertTrue(store.recoveryReport().restoredPages() > 2048, store.recoveryReport().toString());
            checkAll(store);
        }
        try (Varve store = Varve.open(config(8L << 20))) {
            checkAll(store);
        }
    }

    /** A read-only open restores the same way, its written-out pages landing in memory: not one file changes. */
    @Test
    void readOnlyOpenRestoresInASmallRegionWithoutChangingAFile() throws Exception {
        interruptedCheckpointOfManyPages();
        Map<Path, byte[]> before = files();
        try (Varve store = Varve.openReadOnly(config(8L << 20))) {
            assertEquals("physical wal", store.recoveryReport().restoredFrom());
            checkAll(store);
        }
        Map<Path, byte[]> after = files();
        assertEquals(before.keySet(), after.keySet());
        for (Path p : before.keySet()) assertArrayEquals(before.get(p), after.get(p), p.toString());
    }

    private Map<Path, byte[]> files() throws IOException {
        Map<Path, byte[]> m = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.filter(Files::isRegularFile).filter(p -> !p.getFileName().toString().equals("varve.lock")).toList())
                m.put(p, Files.readAllBytes(p));
        }
        return m;
    }

    @Test
    void crashAfterTheRestoreWroteSomePagesOutRestoresAgain() throws Exception {
        interruptedCheckpointOfManyPages();
        AtomicInteger pageWrites = new AtomicInteger();
        HookedFileIOFactory dying = new HookedFileIOFactory((op, file) -> {
            // the first flush of restored pages has gone out (and been forced): the next open stops in the middle
            if (op == HookedFileIOFactory.Op.WRITE && file.toString().endsWith(".page") && pageWrites.incrementAndGet() > 100)
                throw new IOException("injected: the process dies");
        });
        assertThrows(RuntimeException.class, () -> Varve.open(config(8L << 20), dying).close());
        assertTrue(pageWrites.get() > 100, "the restore wrote no page before the injected death");
        try (Varve store = Varve.open(config(8L << 20))) {
            assertEquals("physical wal", store.recoveryReport().restoredFrom());
            checkAll(store);
        }
    }
}
