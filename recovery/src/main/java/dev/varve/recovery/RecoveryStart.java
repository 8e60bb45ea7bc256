package dev.varve.recovery;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.checkpoint.RecoveryFileReader;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.wal.WalSegmentDescriptor;

import java.util.Optional;

/**
 * Where recovery starts, decided from the checkpoint markers alone and before anything is written: the latest
 * checkpoint, whether it completed, and the first WAL LSN recovery reads ({@link #neededFrom}), which the WAL open
 * scan validates to the end.
 *
 * <p>The markers must tell one consistent story, because a lost marker would otherwise be read as a different, valid
 * history: an end marker without its start marker means the start marker was lost (recovery would
 * start from an older mark whose WAL is gone, or from an empty store); a start marker without its end whose recovery
 * files are gone means the end marker was lost (the files are deleted only once the end is written). Either is a
 * {@link CorruptionException} naming the missing marker. An interrupted checkpoint's recovery files are read in full
 * and every entry's checksum checked here (not decoded: the restore decodes them), so a damaged one stops the open
 * before its first page is restored.
 *
 * @param latest      the latest checkpoint's start marker, or null when no checkpoint ever started
 * @param interrupted true when {@code latest} has no end marker: its pages are restored first
 * @param neededFrom  the first WAL LSN recovery reads, or -1 for all of it (no checkpoint ever completed)
 */
public record RecoveryStart(CheckpointMarker latest, boolean interrupted, long neededFrom) {

    /** Decides where recovery starts; reads only. */
    public static RecoveryStart decide(CheckpointMarkers markers, int pageSize) {
        Optional<CheckpointMarker> found = markers.latestStart();
        long evidence = markers.latestEnd();
        long latestId = found.map(CheckpointMarker::id).orElse(-1L);
        if (evidence > latestId) {
            throw new CorruptionException("checkpoint " + evidence + " left an end marker but its start marker " + markers.startPath(evidence).getFileName() + " is missing",
                    markers.startPath(evidence), 0);
        }
        if (found.isEmpty()) return new RecoveryStart(null, false, -1);
        CheckpointMarker start = found.get();
        if (markers.end(start.id()).isPresent()) return new RecoveryStart(start, false, start.markLsn());
        if (start.recoveryData() == CheckpointMarker.RECOVERY_FILES) {
            for (int n = 0; n < start.fileEntries().length; n++) {
                if (!markers.io().exists(markers.recoveryFilePath(start.id(), n))) {
                    throw new CorruptionException("checkpoint " + start.id() + " has no end marker ("
                            + markers.endPath(start.id()).getFileName() + " missing) and its recovery file is gone: "
                            + "either the end marker or the recovery file was lost", markers.recoveryFilePath(start.id(), n), 0);
                }
                RecoveryFileReader.verify(markers, start, n, pageSize);
            }
            return new RecoveryStart(start, true, start.markLsn());
        }
        return new RecoveryStart(start, true, start.prevMarkLsn());
    }

    /**
     * The first WAL LSN the open validates, {@link #neededFrom}; with no checkpoint ever started no segment was ever
     * deleted, so the WAL must hold every record from its very first LSN. Tools that read the WAL judge it from here
     * too: damage before it is in records no recovery reads.
     */
    public long walScanFrom(long segmentSize) {
        return latest == null ? WalSegmentDescriptor.firstLsn(0, segmentSize) : neededFrom;
    }

    /**
     * Checks the WAL's witness: {@code startedInWal} is the latest checkpoint the WAL records as having begun writing
     * pages ({@code CHECKPOINT_STARTED}, -1 for none). A checkpoint newer than every start marker means its start
     * marker was lost while its pages may be in the page files.
     */
    public void checkWalWitness(long startedInWal, CheckpointMarkers markers) {
        long latestId = latest == null ? 0 : latest.id();
        if (startedInWal > latestId) {
            throw new CorruptionException("the WAL records that checkpoint " + startedInWal + " began writing pages, "
                    + "but its start marker " + markers.startPath(startedInWal).getFileName() + " is missing (latest "
                    + "start marker: checkpoint " + latestId + ")", markers.startPath(startedInWal), 0);
        }
    }

    /**
     * Wraps a WAL failure met while checking the part of the log an interrupted checkpoint's restore needs: when its
     * end marker was lost, that part was legitimately deleted, and the lost marker is what to report. A segment of a
     * newer format is no loss: its refusal is passed on as it is.
     */
    public CorruptionException explain(CorruptionException walDamage, CheckpointMarkers markers) {
        if (!interrupted || latest.recoveryData() != CheckpointMarker.PHYSICAL_WAL
                || WalSegmentDescriptor.isNewerVersionRefusal(walDamage) || WalSegmentDescriptor.isForeignRefusal(walDamage)) return walDamage;
        return new CorruptionException("checkpoint " + latest.id() + " has no end marker ("
                + markers.endPath(latest.id()).getFileName() + " missing), so restoring its pages needs the WAL from "
                + "LSN " + neededFrom + ", and that part of the WAL is missing or damaged: either the end marker or "
                + "the WAL was lost (" + walDamage.getMessage() + ")", walDamage.file(), walDamage.offset(), walDamage);
    }
}
