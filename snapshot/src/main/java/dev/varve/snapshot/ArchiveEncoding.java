package dev.varve.snapshot;

/**
 * Every way the archive packs a place into one {@code long} (H2's {@code composePagePos} style: a plain value with
 * static compose and extract helpers, never a pointer object). These values are stored in Maplog-format logs and
 * ranked extents, so each packing is part of an on-disk format: change none of them.
 *
 * <pre>
 * Location: where a pre-state lives (a Maplog mapping's c, a ranked extent record's base, a join's c).
 *  63  62       61 ....... 56   55 ........................................ 0
 * +---+--------+-------------+--------------------------------------------+
 * | 0 | extent | level       | address in that level's Pagelog volume     |   extent = 0
 * | 0 | 1      | offset in the view's ranked extent file                  |   extent = 1 (in memory only)
 * +---+--------+-------------+--------------------------------------------+
 *   A join's c uses the same packing with a Maplog position in place of the volume address.
 *   Extent locations exist only in a view's page index: they are never written.
 *
 * Move target (moves.log, c): a location whose top bits say what the copy wrote.
 *  63  62           61            60 ... 56   55 ............................... 0
 * +---+------------+-------------+-----------+----------------------------------+
 * | 0 | says       | wrote       | level     | the snapshot's Start at level    |
 * |   | extent     | extent      | (5 bits)  |                                  |
 * +---+------------+-------------+-----------+----------------------------------+
 *   says extent = 0: written before the entry recorded it; wrote extent then means nothing.
 *
 * Checkpoint-mark key (archive-marks.log, b): which value of a level the entry carries.
 *   1 .. 999          level j's Maplog position                 (key = j)
 *   1001 .. 1999      level j's Pagelog volume address          (key = 1000 + j)
 *   2001 and above    not a level's: see {@link ArchiveMarksDescriptor}
 * </pre>
 */
final class ArchiveEncoding {
    /** A location's level sits above this bit. */
    static final int LEVEL_SHIFT = 56;
    /** A location's address (or Maplog position, or move Start) bits. */
    static final long ADDRESS_MASK = (1L << LEVEL_SHIFT) - 1;
    /** Set in the location of a ranked-extent record; the rest is the offset in the view's extent file. */
    static final long EXTENT_BIT = 1L << 62;

    /** A move target's level bits (levels 1..31 fit). */
    static final long MOVE_LEVEL_MASK = 0x1f;
    /** Set in every move target written since moves record whether the copy wrote a ranked extent. */
    static final long MOVE_SAYS_EXTENT = 1L << 62;
    /** Set in a move target whose copy wrote a ranked extent (meaningful only with {@link #MOVE_SAYS_EXTENT}). */
    static final long MOVE_WROTE_EXTENT = 1L << 61;

    /** A checkpoint mark's key for level j's volume address is this plus j; its Maplog position's key is j. */
    static final long MARK_ADDRESS_KEYS = 1000;
    /** Keys from here on are not a level's. */
    static final long MARK_OTHER_KEYS = 2 * MARK_ADDRESS_KEYS;

    private ArchiveEncoding() {
    }

    // ---- locations ----

    /** The location of {@code address} in the volume (or Maplog) of {@code level}. */
    static long location(int level, long address) {
        return ((long) level << LEVEL_SHIFT) | address;
    }

    static int levelOf(long location) {
        return (int) (location >>> LEVEL_SHIFT);
    }

    static long addressOf(long location) {
        return location & ADDRESS_MASK;
    }

    /** The location of the ranked-extent record at {@code offset} of the extent a view reads. */
    static long extentLocation(long offset) {
        return EXTENT_BIT | offset;
    }

    static boolean isExtent(long location) {
        return location >= 0 && (location & EXTENT_BIT) != 0;
    }

    static long extentOffset(long location) {
        return location & (EXTENT_BIT - 1);
    }

    // ---- move targets ----

    /** The target of a copy of a snapshot into {@code level}, read there from {@code start}. */
    static long moveTarget(int level, long start, boolean wroteExtent) {
        return location(level, start) | MOVE_SAYS_EXTENT | (wroteExtent ? MOVE_WROTE_EXTENT : 0);
    }

    static int moveLevel(long target) {
        return (int) ((target >>> LEVEL_SHIFT) & MOVE_LEVEL_MASK);
    }

    static long moveStart(long target) {
        return addressOf(target);
    }

    /** Whether the copy wrote a ranked extent; null for a target written before that was recorded. */
    static Boolean moveWroteExtent(long target) {
        return (target & MOVE_SAYS_EXTENT) == 0 ? null : (target & MOVE_WROTE_EXTENT) != 0;
    }

    // ---- checkpoint-mark keys ----

    /** The key of level {@code level}'s Maplog position in a checkpoint mark. */
    static long markMappingsKey(int level) {
        return level;
    }

    /** The key of level {@code level}'s volume address in a checkpoint mark. */
    static long markAddressesKey(int level) {
        return MARK_ADDRESS_KEYS + level;
    }

    /** The level whose Maplog position {@code key} carries, 0 when it carries none. */
    static int mappingsLevelOf(long key) {
        return key >= 1 && key < MARK_ADDRESS_KEYS ? (int) key : 0;
    }

    /** The level whose volume address {@code key} carries, 0 when it carries none. */
    static int addressesLevelOf(long key) {
        return key > MARK_ADDRESS_KEYS && key < MARK_OTHER_KEYS ? (int) (key - MARK_ADDRESS_KEYS) : 0;
    }
}
