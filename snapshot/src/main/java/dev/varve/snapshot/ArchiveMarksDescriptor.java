package dev.varve.snapshot;

/**
 * The layout of {@value #FILE} ({@link ArchiveMarks}): a log in the Maplog format ({@link MaplogDescriptor}) of kind
 * {@link MaplogDescriptor.Kind#MARKS}, header level -1, one part. Each entry is (a = mark LSN, b = key, c = value);
 * each checkpoint mark appends one group of entries, all with its LSN, forced before the checkpoint's start marker.
 *
 * <pre>
 * Group of a mark in an archive of k levels (2k + 7 entries, in this order):
 *   key                           value
 *   j, for j = 1..k               level j's Maplog position      } interleaved per level: j, then 1000 + j
 *   1000 + j                      level j's volume address       } (keys by ArchiveEncoding.markMappingsKey and
 *                                                                }  markAddressesKey)
 *   SNAPSHOTS   2001              records in snapshots.log
 *   DROPS       2002              entries in drops.log
 *   JOINS       2003              entries in joins.log
 *   MOVES       2004              entries in moves.log
 *   LATEST      2005              the latest snapshot id at the mark
 *   HIGH_WATER  2006              the highest id the snapshot log then held
 *   END         2100              entries in the group, END included (2k + 7): a group cut short is never whole
 * </pre>
 *
 * <p>Stored kind: MARKS is stored as code 6. Archives written before the counts existed store the file as UPLINKS
 * (code 2) at level -1, and their groups hold only the level keys, with no END entry; they are still read, without the
 * count checks ({@link MaplogDescriptor.Kind#isLegacyMarks}). Nothing rewrites such a header: the bytes on disk stay
 * as they were written.
 *
 * <p>Format versions: the Maplog format's (1). Group layouts, told apart by the stored kind:
 * <ul>
 *   <li>stored UPLINKS: level keys only.</li>
 *   <li>stored MARKS: level keys, the six counts and END.</li>
 * </ul>
 */
final class ArchiveMarksDescriptor {
    static final String FILE = "archive-marks.log";

    static final long SNAPSHOTS = 2001;
    static final long DROPS = 2002;
    static final long JOINS = 2003;
    static final long MOVES = 2004;
    static final long LATEST = 2005;
    static final long HIGH_WATER = 2006;
    static final long END = 2100;
    /** Entries of a group besides the two per level: the six counts and END. */
    static final int FIXED_ENTRIES = (int) (HIGH_WATER - SNAPSHOTS) + 2;

    private ArchiveMarksDescriptor() {
    }

    /** Entries in the group of a mark of an archive of {@code levels} levels: END's value. */
    static long groupEntries(int levels) {
        return 2L * levels + FIXED_ENTRIES;
    }

    /** True for a key that carries one of the counts (SNAPSHOTS .. HIGH_WATER, or a later one before END). */
    static boolean isCount(long key) {
        return key >= SNAPSHOTS && key < END;
    }
}
