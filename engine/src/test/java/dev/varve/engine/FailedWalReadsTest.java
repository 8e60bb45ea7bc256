package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Under FSYNC a write is applied to the pages before its commit's fsync: when that fsync fails, the caller is told the
 * write failed, yet the pages hold it, and whether a reopen shows it depends on what the disk kept. Reads of the live
 * state are refused from then on, as writes are (they served the failed write as data), while snapshot views, which
 * read what was declared before, go on; the reopened store is sound and holds every write that returned.
 */
@Timeout(60)
class FailedWalReadsTest {
    @TempDir
    Path dir;

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aFailedCommitStopsLiveReadsButNotViewsOfEarlierSnapshots() {
        AtomicBoolean failSync = new AtomicBoolean();
        HookedFileIOFactory io = new HookedFileIOFactory((op, file) -> {
            if (failSync.get() && op == HookedFileIOFactory.Op.FORCE && file.getFileName().toString().startsWith("wal-"))
                throw new IOException("Input/output error");
        });
        VarveConfig cfg = VarveConfig.builder().path(dir).dataRegionSize(8L << 20).walSyncMode(WalSyncMode.FSYNC)
                .checkpointFrequency(Duration.ofHours(1)).checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        try (Varve store = Varve.open(cfg, io)) {
            Table t = store.table("t");
            t.put(b("k"), b("old"));
            t.put(b("other"), b("kept"));
            long before = store.snapshotNow();
            failSync.set(true);
            assertThrows(StorageException.class, () -> t.put(b("k"), b("new")), "the commit's fsync failed");
            StorageException e = assertThrows(StorageException.class, () -> t.get(b("k")));
            assertTrue(e.getMessage().contains("refuses reads") && e.getMessage().contains("Input/output error"), e.getMessage());
            assertThrows(StorageException.class, () -> t.scan(null, null).next());
            assertThrows(StorageException.class, () -> t.partition(0).size());
            assertNotNull(store.metrics().failure());
            try (SnapshotView past = store.asOf(before)) {
                assertArrayEquals(b("old"), past.table("t").get(b("k")), "a view of an earlier snapshot still reads");
            }
        }
        try (Varve store = Varve.open(cfg)) {
            Table t = store.table("t");
            assertArrayEquals(b("kept"), t.get(b("other")), "every write that returned is there");
            byte[] k = t.get(b("k"));
            assertTrue(new String(k, StandardCharsets.UTF_8).equals("old") || new String(k, StandardCharsets.UTF_8).equals("new"));
            assertEquals(null, store.metrics().failure());
        }
    }
}
