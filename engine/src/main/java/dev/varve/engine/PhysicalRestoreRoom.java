package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.PhysicalRecords;
import dev.varve.config.VarveConfig;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.wal.WalRecordVisitor;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The pages a physical restore of the checkpoint a crash interrupted puts back, seen by the open's WAL scan, against
 * the data region the store is opened with. The restore rebuilds each page in the region from the images and deltas
 * the WAL holds between the previous mark and the interrupted one, and writes them all only at its end, so every page
 * stays in the region, dirty, until then: more pages than a smaller {@code dataRegionSize} holds filled it and waited
 * two minutes for a clean page, then failed asking whether the checkpointer was stuck. Refused before anything is
 * written. The pages were all dirty together in the region that wrote them, so that region is never refused.
 */
final class PhysicalRestoreRoom implements WalRecordVisitor {
    /** The interrupted checkpoint restored from physical records, or null when the open restores none that way. */
    private final CheckpointMarker interrupted;
    /** Page ids of the images in the restored range, a page once per image (a split logs another). */
    private long[] pageIds = new long[0];
    private int images;

    PhysicalRestoreRoom(CheckpointMarker latest, boolean interrupted) {
        this.interrupted = interrupted && latest.recoveryData() == CheckpointMarker.PHYSICAL_WAL ? latest : null;
    }

    @Override
    public void visit(long lsn, int type, ByteBuffer payload) {
        if (interrupted == null || lsn < interrupted.prevMarkLsn() || lsn >= interrupted.markLsn() || !PhysicalRecords.isImage(type)) return;
        if (images == pageIds.length) pageIds = Arrays.copyOf(pageIds, Math.max(1024, images * 2));
        pageIds[images++] = payload.getLong(payload.position());
    }

    /** Refuses {@code memory}, the store's data region, when it holds fewer frames than the restore's pages. */
    void refuseSmaller(PageMemory memory, VarveConfig config) {
        if (images <= memory.capacityPages()) return; // no more pages than images
        long[] ids = Arrays.copyOf(pageIds, images);
        Arrays.sort(ids);
        int pages = images == 0 ? 0 : 1;
        for (int i = 1; i < images; i++) if (ids[i] != ids[i - 1]) pages++;
        if (pages <= memory.capacityPages()) return;
        long neededMiB = ((long) pages * config.pageSize() + (1L << 20) - 1) >> 20;
        throw new IllegalArgumentException("dataRegionSize of " + config.dataRegionSize() + " bytes (" + memory.capacityPages()
                + " pages) is too small to recover this store: checkpoint " + interrupted.id() + ", which a crash interrupted, is restored"
                + " from physical WAL records, and its " + pages + " pages stay in the region until all are rebuilt. Open with"
                + " dataRegionSize of more than " + neededMiB + " MiB (e.g. the size it ran with); once it has recovered, a smaller"
                + " one works. Nothing was changed");
    }
}
