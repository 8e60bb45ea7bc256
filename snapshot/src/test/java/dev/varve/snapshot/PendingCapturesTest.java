package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.memory.PageSlots;
import dev.varve.core.page.Page;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pending queue, alone (no archiver thread: this test drains it by hand): captures reach the volume and the
 * Maplog in capture order, a batch at a time, give their buffer slots back and are counted for their snapshot; a
 * checkpoint waiting for them learns of an archiver failure instead of waiting on.
 */
@Timeout(60)
class PendingCapturesTest {
    private static final int PAGE = 4096;
    private static final int CAPTURES = 300;

    @TempDir
    Path dir;

    @Test
    void capturesAreArchivedInCaptureOrderABatchAtATime() {
        FileIOFactory io = FileIOFactory.standard();
        ArchiveLock lock = new ArchiveLock();
        try (SnapshotRegistry registry = new SnapshotRegistry(io, dir, RankTreePolicy.levels(Retention.keepAll()), 64);
             ArchiveLevel level = new ArchiveLevel(io, dir, 1, PAGE, 1, 16, 256L << 10, MaplogFile.Missing.CREATE, new java.util.concurrent.atomic.AtomicLong())) {
            ArchiveLevel[] levels = {level};
            RankedExtents extents = new RankedExtents();
            PageSlots slots = new PageSlots(512L * PAGE, PAGE, "captureBufferSize");
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, extents, PAGE, -1, () -> 0);
            OpenViews views = new OpenViews(lock, io, levels, registry, extents, slots);
            PendingCaptures pending = new PendingCaptures(lock, new Archiver(null), levels, slots, views, retention); // never started
            Page page = new Page(ByteBuffer.allocateDirect(PAGE), 0, PAGE);
            lock.lock();
            try {
                for (int i = 0; i < CAPTURES; i++) {
                    page.putLong(64, 1000 + i);
                    int slot = slots.copyOf(page);
                    pending.add(new PendingCaptures.Pending(i, i, slot, 1, new long[]{1}, new long[]{i}, 1, 0, 1, null, dev.varve.core.page.Page.allChanged()));
                }
            } finally {
                lock.unlock();
            }
            assertTrue(pending.archiveNext());
            assertEquals(256, level.maplog.size(), "one batch");
            assertEquals(CAPTURES - 256, slots.used(), "the batch's slots are free again");
            assertTrue(pending.archiveNext());
            assertFalse(pending.archiveNext(), "nothing left");
            pending.awaitArchived(CAPTURES); // returns at once: all archived
            assertEquals(0, slots.used());
            Page image = new Page(ByteBuffer.allocateDirect(PAGE), 0, PAGE);
            for (int i : new int[]{0, 255, 256, CAPTURES - 1}) {
                level.volume.reader.read(i, i, image.buffer(), 0);
                assertEquals(1000 + i, image.getLong(64), "capture " + i + " at its address");
            }
            assertEquals(CAPTURES * (PAGE + PagelogDescriptor.RECORD_HEADER_SIZE + MaplogDescriptor.ENTRY_SIZE), retention.archiveBytes(1), "counted for snapshot 1");
        }
    }

    /**
     * A diff its volume stores whole, because its base lies in an earlier segment, heads a new chain: the captures after
     * it count their links from it. Counted on from the old segment's chain, every new segment's first chain of a page
     * ended short of the bound, a whole page more per page per segment.
     */
    @Test
    void aDiffStoredWholeInANewSegmentStartsTheChainAgain() {
        int bound = 63; // the capture path's default: a whole page once a chain has this many links
        int captures = 12_000; // diffs of one chunk, ~80 bytes each: some 3,000 to a 256 KiB segment
        FileIOFactory io = FileIOFactory.standard();
        ArchiveLock lock = new ArchiveLock();
        try (SnapshotRegistry registry = new SnapshotRegistry(io, dir, RankTreePolicy.levels(Retention.keepAll()), 64);
             ArchiveLevel level = new ArchiveLevel(io, dir, 1, PAGE, 1, 16, 256L << 10, MaplogFile.Missing.CREATE, new java.util.concurrent.atomic.AtomicLong())) {
            PageSlots slots = new PageSlots(16L * PAGE, PAGE, "captureBufferSize");
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), PAGE, -1, () -> 0);
            OpenViews views = new OpenViews(lock, io, new ArchiveLevel[]{level}, registry, new RankedExtents(), slots);
            PendingCaptures pending = new PendingCaptures(lock, new Archiver(null), new ArchiveLevel[]{level}, slots, views, retention);
            Page page = new Page(ByteBuffer.allocateDirect(PAGE), 0, PAGE);
            int[] chains = new int[captures];
            PendingCaptures.Pending previous = null;
            for (int i = 0; i < captures; i++) {
                int at = 8 * (i % Page.CHUNKS);
                page.putLong(at, i);
                long[] changed = new long[Page.MASK_LONGS];
                changed[(at / 8) >>> 6] |= 1L << (at / 8);
                PendingCaptures.Pending base = previous != null && previous.chain() < bound ? previous : null;
                lock.lock();
                try {
                    previous = new PendingCaptures.Pending(i, 7, slots.copyOf(page), 1, new long[]{1}, new long[]{i}, 1, 0, 1, base,
                            base == null ? Page.allChanged() : changed);
                    pending.add(previous);
                } finally {
                    lock.unlock();
                }
                assertTrue(pending.archiveNext()); // archived before the next capture takes it for its base, as a rule
                chains[i] = previous.chain();
            }
            assertTrue(level.volume.bytes() > 3 * (256L << 10), "the history spans several segments");
            int restarts = 0;
            for (int i = 1; i < captures; i++) {
                assertTrue(chains[i] == 0 || chains[i] == chains[i - 1] + 1, "capture " + i + ": chain " + chains[i] + " after " + chains[i - 1]);
                if (chains[i] == 0 && chains[i - 1] < bound) restarts++; // whole before the bound: a new segment
            }
            assertTrue(restarts >= 3, "each new segment starts a chain: " + restarts + " restarts");
        }
    }

    /** The archiver rests only while nothing is pending, and the capture queued behind none ends the rest. */
    @Test
    void theArchiverRestsOnlyWithNothingPendingAndTheNextCaptureEndsIt() {
        ArchiveLock lock = new ArchiveLock();
        PageSlots slots = new PageSlots(4L * PAGE, PAGE, "captureBufferSize");
        PendingCaptures pending = new PendingCaptures(lock, new Archiver(null), new ArchiveLevel[0], slots, null, null);
        assertTrue(pending.rest(), "nothing pending: it may rest");
        assertTrue(pending.archiverResting());
        Page page = new Page(ByteBuffer.allocateDirect(PAGE), 0, PAGE);
        lock.lock();
        try {
            pending.add(new PendingCaptures.Pending(0, 7, slots.copyOf(page), 1, new long[]{1}, new long[]{0}, 1, 0, 1, null, Page.allChanged()));
        } finally {
            lock.unlock();
        }
        assertFalse(pending.archiverResting(), "the capture woke the archiver");
        assertFalse(pending.rest(), "a capture is pending: no rest");
        assertFalse(pending.archiverResting());
    }

    @Test
    void aWaitForTheArchiverEndsWithItsFailure() {
        ArchiveLock lock = new ArchiveLock();
        PendingCaptures pending = new PendingCaptures(lock, new Archiver(null), new ArchiveLevel[0], new PageSlots(PAGE, PAGE, "captureBufferSize"), null, null);
        IllegalStateException cause = new IllegalStateException("the disk is gone");
        pending.failed(cause);
        StorageException e = assertThrows(StorageException.class, () -> pending.awaitArchived(1));
        assertSame(cause, e.getCause());
        assertTrue(e.getMessage().contains("archiver failed"), e.getMessage());
    }
}
