package dev.varve.recovery;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.checkpoint.Checkpointer;
import dev.varve.checkpoint.PhysicalRecords;
import dev.varve.checkpoint.RecoveryFileReader;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.page.PageId;
import dev.varve.core.spi.LogicalReplay;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.store.PageStore;
import dev.varve.core.wal.Wal;
import dev.varve.core.wal.WalReader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashSet;
import java.util.Set;

/**
 * Crash recovery, run by {@code Varve.open} before anything else touches the store:
 * <ol>
 *   <li>the markers decide: a start marker without its end means the crash hit that checkpoint's page writes;</li>
 *   <li>binary restore puts every page of that checkpoint back to its image at the mark — from its recovery files
 *       if it wrote them, else by replaying physical WAL records from the previous mark — chosen by what the
 *       marker says is on disk, not by the current configuration; then its end marker is written;</li>
 *   <li>logical replay applies every logical record after the last complete mark, checkpointing whenever the data
 *       region runs short (marks at the replay position);</li>
 *   <li>a final checkpoint — or, for a store that will take writes, a request for one that the started
 *       checkpointer runs in the background when replay changed pages (see {@link #run}).</li>
 * </ol>
 * Every step is idempotent, so a recovery that is itself interrupted recovers correctly the next time.
 */
public final class Recovery {
    private static final Logger LOG = LoggerFactory.getLogger(Recovery.class);

    private final PageMemory memory;
    private final Wal wal;
    private final CheckpointMarkers markers;
    private final Checkpointer checkpointer;
    private final RecoveryStart start;

    /**
     * Recovery over the store's parts from {@code start} (decided before the WAL was opened); the checkpointer's
     * background trigger must not be started yet.
     */
    public Recovery(PageMemory memory, Wal wal, CheckpointMarkers markers, Checkpointer checkpointer, RecoveryStart start) {
        this.memory = memory;
        this.wal = wal;
        this.markers = markers;
        this.checkpointer = checkpointer;
        this.start = start;
    }

    /**
     * Runs recovery; {@code replay} applies logical records (and formats an empty store).
     *
     * <p>With {@code finalCheckpointInBackground}, pages that logical replay changed stay dirty and the report says
     * {@link RecoveryReport#checkpointPending() a checkpoint is pending}: the caller starts the checkpointer and
     * requests one. The store then takes writes while that checkpoint runs, instead of after it (it writes what
     * replay changed — up to the whole data region — and took about half of {@code open} with 1 GiB dirty). Nothing
     * is at risk meanwhile: the WAL keeps every record since the last complete mark until a later checkpoint
     * completes, so a crash before then recovers the same way again, and that checkpoint protects its page writes
     * with recovery files whatever the mode ({@code Checkpointer#start}: pages dirty at start are not covered by
     * physical records). A read-only store, whose checkpointer never starts, passes false.
     */
    public RecoveryReport run(LogicalReplay replay, boolean finalCheckpointInBackground) {
        long t0 = System.nanoTime();
        // open's scan checked every record from where recovery reads (RecoveryStart#neededFrom) up to the WAL's end
        // as recovery starts, so recovery's readers do not check them again
        long scannedEnd = wal.position();
        String restored = "none";
        int restoredPages = 0;
        CheckpointMarker complete = start.latest();
        if (start.interrupted()) {
            CheckpointMarker interrupted = start.latest();
            boolean files = interrupted.recoveryData() == CheckpointMarker.RECOVERY_FILES;
            LOG.warn("checkpoint {} was interrupted: restoring its pages from {}", interrupted.id(),
                    files ? "its recovery files" : "physical WAL records");
            Set<Integer> stamped = new HashSet<>();
            restoredPages = files ? restoreFromFiles(interrupted, stamped) : restoreFromWal(interrupted, scannedEnd);
            checkpointer.finishRestore(interrupted, stamped);
            restored = files ? "recovery files" : "physical wal";
        }
        long from = complete == null ? wal.firstLsn() : complete.markLsn();
        checkpointer.resumeAfter(complete == null ? 0 : complete.id(), from);
        replay.beforeReplay(complete == null, from);
        long replayed = replay(from, replay, scannedEnd);
        boolean pending = finalCheckpointInBackground && replayed > 0;
        // past the mark of a cleanly closed store the WAL holds the witness of its last checkpoint alone, which needs
        // no new mark: marked at that mark with no page dirty, the checkpoint runs none (a reopen runs none unless it
        // recovers something, as VarveMetrics.lastCheckpoint says); marked at the WAL's end it wrote markers and an
        // empty recovery file at every reopen after a checkpoint that wrote pages, and showed operators a "recovery"
        // checkpoint after a clean restart. Nothing replayed, the pages are as of that mark, so it is never too late.
        boolean nothingPastMark = complete != null && !start.interrupted() && replayed == 0 && wal.tailCut().isEmpty();
        if (!pending) checkpointer.checkpoint("recovery", nothingPastMark ? () -> from : wal::position);
        RecoveryReport report = new RecoveryReport(restored, restoredPages, replayed, wal.tailCut().map(Object::toString).orElse(null),
                pending, System.nanoTime() - t0);
        if (replayed > 0 || restoredPages > 0 || report.walTailCut() != null) LOG.info("{}", report);
        return report;
    }

    /** Writes the recovery files' pages; each file written is stamped with the checkpoint's id (into {@code stamped}) before its fsync. */
    private int restoreFromFiles(CheckpointMarker start, Set<Integer> stamped) {
        PageStore store = memory.store();
        Set<Integer> touched = new HashSet<>();
        int[] pages = {0};
        for (int n = 0; n < start.fileEntries().length; n++) {
            RecoveryFileReader.read(markers, start, n, memory.pageSize(), (pageId, image) -> {
                store.write(pageId, image, 0);
                touched.add(PageId.fileId(pageId));
                pages[0]++;
            });
        }
        for (int fileId : touched) {
            if (store.stampGeneration(fileId, start.id())) stamped.add(fileId);
            store.force(fileId);
        }
        return pages[0];
    }

    private int restoreFromWal(CheckpointMarker start, long scannedEnd) {
        // a page may have several images (a split logs one mid-way), so the pages are counted by id
        Set<Long> pages = new HashSet<>();
        RecentRecords batches = new RecentRecords(wal);
        try (WalReader r = wal.read(start.prevMarkLsn())) {
            r.checkedBefore(scannedEnd);
            while (r.next() && r.lsn() < start.markLsn()) {
                if (r.type() == RecordTypes.DATA_BATCH) batches.offer(r); // what later rebuilds may copy values from
                if (!PhysicalRecords.isPhysical(r.type())) continue;
                // a record changes one page (a rebuild only reads the others); when the region has no room left for
                // it — the interrupted checkpoint held more pages than this open's dataRegionSize — the pages
                // restored so far are written out, as nothing else cleans pages before the store is open
                if (!memory.tryReserve(1)) {
                    checkpointer.flushRestored(start);
                    memory.awaitHeadroom(1);
                }
                try {
                    PhysicalRecords.apply(r.type(), r.payload(), memory, batches);
                } finally {
                    memory.releaseHeadroom(1);
                }
                if (PhysicalRecords.isImage(r.type())) pages.add(r.payload().getLong(0));
            }
        }
        return pages.size();
    }

    /**
     * Logical replay from {@code from}. Each record first reserves head-room for the pages it may dirty (at least what
     * its live write reserved) and hands it to the replayer, which returns it once the record is applied — the
     * replayer may still be applying records queued before. When the region is short, recovery waits for queued
     * records to be applied and, once none is queued and there is still no room, runs a checkpoint with its mark at
     * this record: all before it is applied.
     */
    private long replay(long from, LogicalReplay replay, long scannedEnd) {
        long n = 0;
        try (WalReader r = wal.read(from)) {
            r.checkedBefore(scannedEnd);
            while (r.next()) {
                if (!RecordTypes.isLogical(r.type())) continue;
                int bytes = r.payload().remaining();
                int ops = replay.operations(r.type(), r.payload());
                // its live write reserved its own pages plus the overflow chains it frees; replay reserves the most
                // those can be (I6: the same or more)
                long freed = replay.freedPagesBound(r.type(), r.payload());
                int pages = (int) Math.min((long) memory.headroomFor(bytes, ops) + freed, memory.maxHeadroom());
                boolean reserved = memory.tryReserve(pages);
                while (!reserved && replay.awaitApplied()) reserved = memory.tryReserve(pages);
                if (!reserved && !memory.tryReserve(pages)) { // every record before this one is applied
                    long at = r.lsn();
                    checkpointer.checkpoint("recovery", () -> at);
                    memory.awaitHeadroom(pages);
                }
                replay.apply(r.type(), r.payload(), r.lsn(), pages);
                n++;
            }
            replay.drain();
        } finally {
            replay.endReplay();
        }
        return n;
    }
}
