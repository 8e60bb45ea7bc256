package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.checkpoint.RecoveryFileReader;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;

/**
 * Salvage's stand-in for recovery's binary restore, for a store that does not open. A checkpoint interrupted while
 * writing pages (a start marker without its end) leaves its page files half-updated: some pages at the checkpoint's
 * mark, others as the checkpoint before wrote them, one maybe torn. Read as they are, they can lose entries written
 * long before the crash — a leaf split whose old leaf was rewritten without the half that moved while the new leaf
 * was not written yet — or serve two values of a key. Recovery puts every page of that checkpoint back to its image at
 * the mark before anything reads them; this does the same into salvage's in-memory overlay, so the page files read as
 * that mark left them and the damaged store is not written.
 *
 * <p>Only what checks out is applied. {@link RecoveryFileReader} checks the file's header and size before its first
 * entry and each entry's CRC32C before handing it over, so a damaged file restores the pages ahead of the damage and
 * the damage is reported with its file and offset; the pages after it stay as the page files hold them (a torn one is
 * then reported by the leaf scan). A checkpoint protected by physical WAL records is not restored: that needs the WAL
 * from the previous mark, which a store that does not open may not have whole, and a page rebuilt from part of it
 * would be invented — it is reported instead.
 */
final class InterruptedCheckpointRestore {
    private static final Logger LOG = LoggerFactory.getLogger(InterruptedCheckpointRestore.class);
    /** What a reader of the page files is told about the pages of an interrupted checkpoint that were not restored. */
    private static final String AS_ON_DISK = "salvaged as the page files hold them: a torn one is reported, others may hold "
            + "values older than the checkpoint's or miss entries that moved to another page in it";

    private InterruptedCheckpointRestore() {
    }

    /**
     * Restores into {@code pages} (over an in-memory overlay) what the interrupted checkpoint of {@code markers} would
     * have restored at open, reporting to {@code sink} what it cannot; does nothing when the latest checkpoint
     * completed. Returns how many page images were restored.
     */
    static int apply(CheckpointMarkers markers, PageStore pages, StoreSalvager.Sink sink) {
        Optional<CheckpointMarker> latest;
        try {
            latest = markers.latestStart();
        } catch (StorageException e) {
            Path file = e.file() != null ? e.file() : markers.startPath(0).getParent();
            sink.lost(file, offset(e), "checkpoint start marker unreadable (" + finding(e) + "), so a checkpoint interrupted "
                    + "while writing pages cannot be restored: its pages are " + AS_ON_DISK);
            return 0;
        }
        if (latest.isEmpty()) return 0;
        CheckpointMarker start = latest.get();
        // the end marker is renamed into place only after every page of its checkpoint was fsynced: its presence is
        // the proof of completion, whatever its content now reads
        if (markers.io().exists(markers.endPath(start.id()))) return 0;
        if (start.recoveryData() != CheckpointMarker.RECOVERY_FILES) {
            sink.lost(markers.startPath(start.id()), 0, "checkpoint " + start.id() + " was interrupted while writing pages, and "
                    + "its pages are restored from physical WAL records, which salvage of a store that does not open does not replay: "
                    + "the pages it was writing are " + AS_ON_DISK);
            return 0;
        }
        int restored = 0;
        for (int n = 0; n < start.fileEntries().length; n++) restored += restoreFile(markers, start, n, pages, sink);
        LOG.info("salvage: {} pages of interrupted checkpoint {} restored from its recovery files", restored, start.id());
        return restored;
    }

    /**
     * Restores the checked entries of recovery file {@code n} up to its first damage; reports the damage, and each page
     * file that cannot take its pages (a damaged header: the rest of the file's pages still go to the other files).
     */
    private static int restoreFile(CheckpointMarkers markers, CheckpointMarker start, int n, PageStore pages, StoreSalvager.Sink sink) {
        Path recoveryFile = markers.recoveryFilePath(start.id(), n);
        int[] restored = {0};
        Set<Integer> refused = new HashSet<>();
        try {
            RecoveryFileReader.read(markers, start, n, pages.pageSize(), (pageId, image) -> {
                int fileId = PageId.fileId(pageId);
                if (refused.contains(fileId)) return;
                try {
                    pages.write(pageId, image, 0);
                    restored[0]++;
                } catch (StorageException e) {
                    refused.add(fileId);
                    sink.lost(pages.pathOf(fileId), offset(e), "page file cannot take the pages of interrupted checkpoint " + start.id()
                            + " held in " + recoveryFile.getFileName() + " (" + finding(e) + "): they are " + AS_ON_DISK);
                }
            });
        } catch (StorageException e) {
            sink.lost(e.file() != null ? e.file() : recoveryFile, offset(e), "recovery file of interrupted checkpoint " + start.id()
                    + " unusable from here (" + finding(e) + "; the " + restored[0] + " pages before it were restored): the pages it "
                    + "holds from here on are " + AS_ON_DISK);
        }
        return restored[0];
    }

    private static long offset(StorageException e) {
        return e instanceof CorruptionException c ? c.offset() : 0;
    }

    /** The finding without the file and offset the sink is given separately. */
    private static String finding(StorageException e) {
        return e instanceof CorruptionException c ? c.what() : e.getMessage();
    }
}
