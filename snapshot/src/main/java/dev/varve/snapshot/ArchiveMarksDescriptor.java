package dev.varve.snapshot;

/**
 * The layout of {@value #FILE} ({@link ArchiveMarks}): a log in the Maplog format ({@link MaplogDescriptor}) of kind
 * {@link MaplogDescriptor.Kind#MARKS}, header level -1, one part. Each entry is (a = mark LSN, b = key, c = value);
 * each checkpoint mark appends one group of entries, all with its LSN, forced before the checkpoint's start marker.
 *
 * <pre>
 * Group of a mark in an archive of k levels (2k + 9 + 2s + 2f + a entries, in this order):
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
 *   CLOCK_CORRECTION   2007       the retention policy's correction: what the wall clock lost in steps back (ms)
 *   CLOCK_LATEST_WALL  2008       the latest wall-clock time the policy read (epoch ms); absent when it read none
 *   CLOCK_STEP_FROM    2009  } s pairs, ids increasing: from snapshot id (2009) on, declared times are counted
 *   CLOCK_STEP_OFFSET  2010  }   with offset (2010); at most PolicyClock.MAX_STEPS
 *   CLOCK_FLOOR_FROM   2011  } f pairs, ids increasing: from snapshot id (2011) on, a snapshot counts as declared
 *   CLOCK_FLOOR_AT     2012  }   no earlier than time (2012) on the policy's clock
 *   CLOCK_AHEAD_FROM   2013       a (0 or 1) entry: from this snapshot id on, one whose time is past the latest
 *                                 time read counts as declared at its own time (a mark replay took); absent otherwise
 *   END         2100              entries in the group, END included: a group cut short is never whole
 * </pre>
 *
 * <p>The clock entries (2007 .. 2013, {@link PolicyClock}) came after the counts, in the same format version: every
 * build that reads stored MARKS takes a key from 2001 up to END that it does not know as a count it ignores, and
 * checks END against the entries the group holds, not against 2k + 7, so an earlier build reads a group with them
 * and does without the clock; a group without them (written by an earlier build) reads as no correction. 2013 came
 * later in the same way: a build before it counts those snapshots as declared at the latest time read, as it did.
 *
 * <p>Stored kind: MARKS is stored as code 6. Archives written before the counts existed store the file as UPLINKS
 * (code 2) at level -1, and their groups hold only the level keys, with no END entry; they are still read, without the
 * count checks ({@link MaplogDescriptor.Kind#isLegacyMarks}). Nothing rewrites such a header: the bytes on disk stay
 * as they were written.
 *
 * <p>Format versions: the Maplog format's (1). Group layouts, told apart by the stored kind:
 * <ul>
 *   <li>stored UPLINKS: level keys only.</li>
 *   <li>stored MARKS: level keys, the six counts, the retention clock's entries (since the clock was recorded) and
 *   END.</li>
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
    static final long CLOCK_CORRECTION = 2007;
    static final long CLOCK_LATEST_WALL = 2008;
    static final long CLOCK_STEP_FROM = 2009;
    static final long CLOCK_STEP_OFFSET = 2010;
    static final long CLOCK_FLOOR_FROM = 2011;
    static final long CLOCK_FLOOR_AT = 2012;
    static final long CLOCK_AHEAD_FROM = 2013;
    static final long END = 2100;

    private ArchiveMarksDescriptor() {
    }

    /** True for a key that carries one of the counts (SNAPSHOTS .. HIGH_WATER, or a later one before END). */
    static boolean isCount(long key) {
        return key >= SNAPSHOTS && key < END;
    }
}
