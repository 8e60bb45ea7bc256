package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The byte budget, alone: over it, snapshots go lowest rank first and oldest first within a rank, never the latest;
 * what earlier drops will give back is counted until reclamation gives it back, so one excess drops once.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class RetentionEnforcerTest {
    private static final long BUDGET = 1L << 20;
    /** Ranks of snapshots 1..6. */
    private static final int[] RANKS = {2, 1, 2, 1, 1, 2};
    private static final int CAPTURES_EACH = 10;

    @TempDir
    Path dir;

    @Test
    void theLowestRanksOldestGoFirstAndTheLatestStays() {
        try (SnapshotRegistry registry = registry()) {
            ArchiveLock lock = new ArchiveLock();
            long[] onDisk = {0};
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), 4096, BUDGET, () -> onDisk[0]);
            declareAll(lock, registry, retention);
            long each = retention.archiveBytes(1);
            assertEquals(CAPTURES_EACH * (4096L + PagelogDescriptor.RECORD_HEADER_SIZE + MaplogDescriptor.ENTRY_SIZE), each, "a snapshot's captures and their mappings");

            onDisk[0] = BUDGET + each * 5 / 2; // two and a half snapshots over
            retention.enforce();
            assertEquals(List.of(1L, 3L, 6L), live(registry), "rank 1 first, oldest first: 2, 4 and 5 dropped");
            assertTrue(registry.drops().dropped(2).why().contains("budget"), registry.drops().dropped(2).why());

            retention.enforce(); // the same excess: the drops already made will give it back
            assertEquals(List.of(1L, 3L, 6L), live(registry), "nothing dropped twice for one excess");

            lock.lock();
            try {
                retention.givenBack(retention.reclaimable()); // reclamation gave the segments back
            } finally {
                lock.unlock();
            }
            onDisk[0] = BUDGET + each * 3 / 2;
            retention.enforce();
            assertEquals(List.of(6L), live(registry), "then rank 2, oldest first; never the latest");

            onDisk[0] = BUDGET * 100;
            retention.enforce();
            assertEquals(List.of(6L), live(registry), "the latest stays however far over the budget");
        }
    }

    /** A drop from an open view's snapshot on gives nothing back until the view closes: it stays pending till then. */
    @Test
    void whatAViewPinsStaysPendingUntilItCloses() {
        try (SnapshotRegistry registry = registry()) {
            ArchiveLock lock = new ArchiveLock();
            long[] onDisk = {0};
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), 4096, BUDGET, () -> onDisk[0]);
            declareAll(lock, registry, retention);
            long each = retention.archiveBytes(1);
            lock.lock();
            try {
                registry.pin(3); // a view of snapshot 3
            } finally {
                lock.unlock();
            }
            onDisk[0] = BUDGET + each * 5 / 2;
            retention.enforce();
            assertEquals(List.of(1L, 3L, 6L), live(registry), "2, 4 and 5 dropped");
            lock.lock();
            try {
                retention.givenBack(retention.reclaimable());
                assertEquals(2 * each, retention.budgetPending(), "only 2 lies before the view's snapshot");
                registry.unpin(3);
                retention.givenBack(retention.reclaimable());
                assertEquals(0, retention.budgetPending(), "the view closed");
            } finally {
                lock.unlock();
            }
        }
    }

    /** A diff counts its share of its pack: the first one the headers too, the last one the pack's unused tail. */
    @Test
    void aDiffCountsWhatItTakesOfItsPack() {
        try (SnapshotRegistry registry = registry()) {
            ArchiveLock lock = new ArchiveLock();
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), 4096, -1, () -> 0);
            int record = PagelogDescriptor.RECORD_HEADER_SIZE + 4096;
            int mapping = MaplogDescriptor.ENTRY_SIZE;
            lock.lock();
            try {
                for (int id = 1; id <= 3; id++) registry.declare(id, 1, id, id, level -> 0);
                retention.captured(1, ArchiveEncoding.location(1, 7)); // a whole page
                retention.captured(1, diff(8, 8)); // record 8: diffs at 8, 200 and 1000
                retention.captured(2, diff(8, 200));
                retention.captured(2, ArchiveEncoding.location(2, PagelogDescriptor.entryAddress(8, 512))); // level 2's own pack 8
                retention.captured(3, diff(8, 1000));
                retention.captured(3, diff(9, 8)); // the next pack
            } finally {
                lock.unlock();
            }
            assertEquals(record + mapping + PagelogDescriptor.RECORD_HEADER_SIZE + 200 + mapping, retention.archiveBytes(1),
                    "a whole record, and the first diff with the record's header, the pack's and its own bytes");
            assertEquals(800 + mapping + record + mapping, retention.archiveBytes(2), "a diff in the middle; the only one of level 2's pack");
            assertEquals(4096 - 1000 + mapping + record + mapping, retention.archiveBytes(3), "the last diff takes the pack's tail; a next pack's first");
        }
    }

    /**
     * A snapshot kept for good does not keep the capture counts of every snapshot declared after it (8 bytes each,
     * for the rest of the store's life): they follow the live snapshots, and the kept one's count stays right.
     */
    @Test
    void theCaptureCountsFollowTheLiveSnapshotsBehindOneKeptForGood() {
        SnapshotRegistry registry = keptForGoodRegistry();
        try (registry) {
            ArchiveLock lock = new ArchiveLock();
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), 4096, -1, () -> 0);
            long whole = 4096L + PagelogDescriptor.RECORD_HEADER_SIZE + MaplogDescriptor.ENTRY_SIZE;
            int last = 20_000;
            lock.lock();
            try {
                for (int id = 1; id <= last; id++) {
                    registry.declare(id, id == 1 ? 2 : 1, id, id, level -> 0);
                    retention.declared(0);
                    retention.captured(id, ArchiveEncoding.location(1, id)); // a whole page each
                    assertTrue(retention.countedSpan() <= 2 * 3 + 2 * 1024 + 1, "counts span " + retention.countedSpan() + " snapshots after " + id);
                }
                retention.captured(1, ArchiveEncoding.location(2, 1)); // a late one of the kept snapshot still counts
            } finally {
                lock.unlock();
            }
            assertEquals(List.of(1L, last - 1L, (long) last), live(registry));
            assertEquals(2 * whole, retention.archiveBytes(1), "the kept snapshot's captures, set aside by the trims");
            assertEquals(whole, retention.archiveBytes(last));
            assertEquals(0, retention.archiveBytes(2), "dropped long ago: forgotten by a trim");
        }
    }

    /**
     * Recovery recounts every capture the Maplog holds, oldest first, with every snapshot already declared: a trim
     * then moves the run's front far past its end, and the live snapshots in between — kept for good, with counts
     * still to come — must still be counted, not forgotten as the dropped ones are.
     */
    @Test
    void aRecountTrimmedPastItsEndStillCountsTheLiveSnapshotsBetween() {
        SnapshotRegistry registry = keptForGoodRegistry();
        try (registry) {
            ArchiveLock lock = new ArchiveLock();
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), 4096, -1, () -> 0);
            long whole = 4096L + PagelogDescriptor.RECORD_HEADER_SIZE + MaplogDescriptor.ENTRY_SIZE;
            int last = 20_000;
            lock.lock();
            try {
                for (int id = 1; id <= last; id++) registry.declare(id, id % 5000 == 1 ? 2 : 1, id, id, level -> 0); // 1, 5,001, 10,001, 15,001 kept for good
                retention.forgetCaptures(); // as recovery does, then the Maplog's captures in archive order
                for (int id = 1; id <= last; id++) retention.captured(id, ArchiveEncoding.location(1, id)); // a whole page each
            } finally {
                lock.unlock();
            }
            assertEquals(List.of(1L, 5001L, 10_001L, 15_001L, last - 1L, (long) last), live(registry));
            for (long kept : new long[]{1, 5001, 10_001, 15_001})
                assertEquals(whole, retention.archiveBytes(kept), "snapshot " + kept + "'s capture, counted after a trim passed it");
            assertEquals(whole, retention.archiveBytes(last));
        }
    }

    private static long diff(long record, int offset) {
        return ArchiveEncoding.location(1, PagelogDescriptor.entryAddress(record, offset));
    }

    @Test
    void withoutABudgetBytesDropNothing() {
        try (SnapshotRegistry registry = registry()) {
            ArchiveLock lock = new ArchiveLock();
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), 4096, -1, () -> Long.MAX_VALUE);
            declareAll(lock, registry, retention);
            retention.enforce();
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), live(registry));
        }
    }

    private SnapshotRegistry registry() {
        SnapshotRegistry registry = new SnapshotRegistry(FileIOFactory.standard(), dir, RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll()), 64);
        registry.prepare(0, true, ArchiveMarks.Mark.none(2));
        registry.cut();
        return registry;
    }

    /** Declares snapshots 1..6 with {@link #RANKS}, each with {@link #CAPTURES_EACH} captures archived. */
    private static void declareAll(ArchiveLock lock, SnapshotRegistry registry, RetentionEnforcer retention) {
        lock.lock();
        try {
            for (int id = 1; id <= RANKS.length; id++) {
                registry.declare(id, RANKS[id - 1], id, id, level -> 0);
                retention.declared(0);
                for (int i = 0; i < CAPTURES_EACH; i++) retention.captured(id, ArchiveEncoding.location(1, id * CAPTURES_EACH + i)); // whole pages
            }
        } finally {
            lock.unlock();
        }
    }

    private static List<Long> live(SnapshotRegistry registry) {
        List<Long> ids = new ArrayList<>();
        for (SnapshotRecord r : registry.live()) ids.add(r.id());
        return ids;
    }

    /** A fresh registry under keepLast(2) at rank 1 and keepAll() at rank 2, prepared and cut as an open leaves it. */
    private SnapshotRegistry keptForGoodRegistry() {
        SnapshotRegistry registry = new SnapshotRegistry(FileIOFactory.standard(), dir, RankTreePolicy.levels(Retention.keepLast(2), Retention.keepAll()), 64);
        registry.prepare(0, true, ArchiveMarks.Mark.none(2));
        registry.cut();
        return registry;
    }
}
