package dev.varve.engine;

/**
 * One partition of a table: the unit a data grid maps its own partitions onto. In a caller-placed table (see
 * {@link TableOptions#callerPlaced(int)}) it takes any key; in a hash-placed table, keys that hash to another
 * partition are rejected here with {@link IllegalArgumentException}.
 */
public interface Partition {
    /** The partition number. */
    int index();

    /** Stores {@code key} in this partition. */
    void put(byte[] key, byte[] value);

    /** The value of {@code key} in this partition, or null. */
    byte[] get(byte[] key);

    /** Removes {@code key} from this partition; true when it was present. */
    boolean remove(byte[] key);

    /** Entries of this partition in key order; a null bound is open. */
    Cursor scan(byte[] fromInclusive, byte[] toExclusive);

    /** Number of entries in this partition. */
    long size();

    /** Removes every entry of this partition (atomically, logged) and gives its pages back to its free list. */
    void destroy();
}
