package dev.varve.snapshot;

import dev.varve.core.util.LongLongMap;

/**
 * SPT(v): for each page whose pre-state was captured for a snapshot at or after v, where its image as of v lives —
 * the first mapping encountered scanning the Maplog from Start(v). Built when a view opens and kept current while
 * pre-states keep arriving: a capture for a page not in the table yet adds it (first encountered), and archiving
 * moves a location from the capture buffer to the Pagelog. Registered before it is built, so that reclamation
 * keeps what it is about to read. Guarded by the archive's lock.
 *
 * <p>A location is an archive location (&gt;= 0, {@link ArchiveEncoding#location}), a record of the view's ranked
 * extent ({@link ArchiveEncoding#extentLocation}) or a capture-buffer slot still on its way ({@code -(slot + 2)}).
 */
final class SnapshotPageTable {
    static final long MISSING = -1;
    private final long snapshot;
    private final int level;
    private final long start;
    private final RankedExtent.Reader extent;
    private final LongLongMap map = new LongLongMap(1024);
    private boolean building = true;

    SnapshotPageTable(long snapshot, int level, long start, RankedExtent.Reader extent) {
        this.snapshot = snapshot;
        this.level = level;
        this.start = start;
        this.extent = extent;
    }

    /** Start(v) at the level it reads: where its scan of that level's Maplog begins. */
    long start() {
        return start;
    }

    /** True while the table is being built outside the archive's lock: captures are not fed to it yet. */
    boolean building() {
        return building;
    }

    /** The table caught up with the captures made while it was built; from now on it is kept current. */
    void built() {
        building = false;
    }

    /** The rank level whose Maplog and volumes this view reads. */
    int level() {
        return level;
    }

    /** The ranked extent a lazily ranked snapshot's view reads first, or null; the view keeps it on disk. */
    RankedExtent.Reader extent() {
        return extent;
    }

    long snapshot() {
        return snapshot;
    }

    LongLongMap map() {
        return map;
    }

    static long pendingLocation(int slot) {
        return -(slot + 2L);
    }

    static boolean isPending(long location) {
        return location <= -2;
    }

    static int slotOf(long location) {
        return (int) (-location - 2);
    }

    /** A pre-state was captured for {@code capturedFor}: first encountered for this view if it is at or after v. */
    void onCapture(long pageId, long capturedFor, long location) {
        if (capturedFor >= snapshot) map.putIfAbsent(pageId, location);
    }

    /** A pending capture reached the Pagelog. */
    void onArchived(long pageId, long pendingLocation, long address) {
        if (map.get(pageId, MISSING) == pendingLocation) map.replace(pageId, address);
    }
}
