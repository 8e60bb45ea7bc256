package dev.varve.infinispan;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.StorageException;
import org.infinispan.persistence.spi.PersistenceException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ReopeningTables} over a real store on a disk that fails, on a clock the test moves: a local cache's failed
 * store is reopened, and counts as reopened only once it can write; a clustered cache's is left as it is (Infinispan
 * holds up the cluster's rebalances behind a node whose persistence it was told is unavailable).
 */
@Timeout(120)
class ReopeningTablesTest {
    private static final int SEGMENTS = 4;
    @TempDir
    Path dir;
    private final AtomicLong clock = new AtomicLong();

    private ReopeningTables tables(FaultyDisk disk, boolean reopens) {
        VarveConfig config = VarveConfig.builder().path(dir).dataRegionSize(16L << 20).checkpointBufferSize(2L << 20).walSegmentSize(4L << 20).build();
        return new ReopeningTables(dir, disk, () -> new SegmentTables(config, disk, SEGMENTS), reopens, clock::get);
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** A stored entry told apart by its expiry time, far in the future. */
    private static byte[] stored(int i) {
        return SegmentTablesTest.entry(Long.MAX_VALUE / 2 + i);
    }

    /** Writes until the failing disk stops the store; returns the keys acknowledged. */
    private static int writeUntilFailed(ReopeningTables t) {
        for (int i = 0; i < 200_000; i++) {
            try {
                t.current().put(i % SEGMENTS, b("k" + i), stored(i));
            } catch (StorageException e) {
                return i;
            }
        }
        throw new AssertionError("the store never failed");
    }

    @Test
    void aLocalCachesFailedStoreIsReopenedOnceItCanWriteAgain() {
        FaultyDisk disk = new FaultyDisk(dir.resolve("wal"));
        ReopeningTables t = tables(disk, true);
        t.start();
        try {
            assertTrue(t.available());
            disk.full.set(true);
            int acknowledged = writeUntilFailed(t);
            SegmentTables failed = t.current();
            assertFalse(t.available(), "the reopen's checkpoint meets the full disk: not available");
            SegmentTables kept = t.current();
            assertNotSame(failed, kept, "reopened");
            assertThrows(StorageException.class, () -> kept.put(0, b("x"), stored(-1)), "kept as it is: failed, refusing writes");
            assertFalse(t.available(), "not again before the backoff's wait");

            disk.full.set(false);
            clock.addAndGet(ReopenBackoff.LONGEST_WAIT_NANOS);
            assertTrue(t.available(), "reopened, and its checkpoint written");
            SegmentTables resumed = t.current();
            assertNotSame(kept, resumed);
            resumed.put(0, b("after"), stored(-2));
            for (int i = 0; i < acknowledged; i++) assertArrayEquals(stored(i), resumed.get(i % SEGMENTS, b("k" + i)), "k" + i);
        } finally {
            t.stop();
        }
    }

    @Test
    void aClusteredCachesFailedStoreIsNotReopenedAndSaysAvailable() {
        FaultyDisk disk = new FaultyDisk(dir.resolve("wal"));
        ReopeningTables t = tables(disk, false);
        t.start();
        try {
            disk.full.set(true);
            writeUntilFailed(t);
            SegmentTables failed = t.current();
            disk.full.set(false);
            for (int i = 0; i < 3; i++) {
                clock.addAndGet(ReopenBackoff.LONGEST_WAIT_NANOS);
                assertTrue(t.available(), "a clustered cache's store never tells Infinispan it is unavailable");
                assertSame(failed, t.current(), "nor is it reopened: the cache is restarted on the node");
            }
            assertThrows(StorageException.class, () -> failed.put(0, b("x"), stored(-1)));
        } finally {
            t.stop();
        }
    }

    @Test
    void aStoppedStoreIsNotAvailableAndSaysSo() {
        ReopeningTables t = tables(new FaultyDisk(dir.resolve("wal")), true);
        t.start();
        t.stop();
        assertFalse(t.available());
        PersistenceException e = assertThrows(PersistenceException.class, t::current);
        assertTrue(e.getMessage().contains("is not running"), e.getMessage());
        assertTrue(List.of(dir.toFile().list()).contains("wal"));
    }
}
