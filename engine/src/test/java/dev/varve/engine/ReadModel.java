package dev.varve.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The model {@link ReadModelTest} checks reads against: per table its options and one TreeMap per partition (keys in
 * unsigned byte order, as the docs promise), and the checks that hold any {@link Table} — live, a snapshot view, or a
 * read-only store's — to it: options, partition counts and sizes, gets, and full and random range scans of the table
 * and of each partition.
 */
final class ReadModel {
    static final Comparator<byte[]> ORDER = Arrays::compareUnsigned;

    /** One table: its options and its partitions' entries. */
    static final class TableModel {
        final TableOptions options;
        final List<TreeMap<byte[], byte[]>> parts = new ArrayList<>();

        TableModel(TableOptions options) {
            this.options = options;
            for (int p = 0; p < options.partitions(); p++) parts.add(new TreeMap<>(ORDER));
        }

        TableModel copy() {
            TableModel c = new TableModel(options);
            for (int p = 0; p < parts.size(); p++) c.parts.get(p).putAll(parts.get(p));
            return c;
        }

        /** The partition a key goes to: the hash's for a hash-placed table, else the caller's. */
        int partitionOf(byte[] key, int callerPartition) {
            return options.callerPlaced() ? callerPartition : KeyHash.partition(key, parts.size());
        }
    }

    static Map<String, TableModel> copy(Map<String, TableModel> tables) {
        Map<String, TableModel> c = new TreeMap<>();
        tables.forEach((n, m) -> c.put(n, m.copy()));
        return c;
    }

    /** Entries of {@code m} with {@code from <= key < to} (null bounds open); none when from is above to. */
    static NavigableMap<byte[], byte[]> range(TreeMap<byte[], byte[]> m, byte[] from, byte[] to) {
        if (from != null && to != null && ORDER.compare(from, to) > 0) return new TreeMap<>(ORDER);
        if (from == null && to == null) return m;
        if (from == null) return m.headMap(to, false);
        if (to == null) return m.tailMap(from, true);
        return m.subMap(from, true, to, false);
    }

    /** Drains a cursor, checking that its keys never go down (equal keys only across a caller-placed table's partitions). */
    static List<byte[][]> drain(Cursor c, boolean strictlyIncreasing, String what) {
        List<byte[][]> out = new ArrayList<>();
        try (c) {
            while (c.next()) {
                byte[] k = c.key();
                if (!out.isEmpty()) {
                    int cmp = ORDER.compare(out.get(out.size() - 1)[0], k);
                    assertTrue(strictlyIncreasing ? cmp < 0 : cmp <= 0, what + ": keys out of order at " + hex(k));
                }
                out.add(new byte[][]{k, c.value()});
            }
            assertFalse(c.next(), what + ": next() after the end");
        }
        return out;
    }

    /** What a scan of partitions {@code parts} over [from, to) must return, by key then value. */
    static List<byte[][]> expected(List<TreeMap<byte[], byte[]>> parts, byte[] from, byte[] to) {
        List<byte[][]> out = new ArrayList<>();
        for (TreeMap<byte[], byte[]> m : parts) range(m, from, to).forEach((k, v) -> out.add(new byte[][]{k, v}));
        out.sort(ENTRY_ORDER);
        return out;
    }

    static final Comparator<byte[][]> ENTRY_ORDER = (a, b) -> {
        int c = ORDER.compare(a[0], b[0]);
        return c != 0 ? c : ORDER.compare(a[1], b[1]);
    };

    static void assertEntries(List<byte[][]> expected, List<byte[][]> actual, String what) {
        List<byte[][]> sorted = new ArrayList<>(actual);
        sorted.sort(ENTRY_ORDER); // equal keys of a caller-placed table's partitions come in any order
        assertEquals(expected.size(), sorted.size(), what + ": entry count");
        for (int i = 0; i < expected.size(); i++) {
            assertArrayEquals(expected.get(i)[0], sorted.get(i)[0], what + ": key #" + i);
            assertArrayEquals(expected.get(i)[1], sorted.get(i)[1], what + ": value of " + hex(expected.get(i)[0]));
        }
    }

    /**
     * Checks {@code t} against {@code m} (null: a table that does not exist as of the state read): options,
     * partitions, sizes, gets of {@code probes}, and scans of the whole table and partitions and of random ranges.
     */
    static void check(Table t, TableModel m, List<byte[]> probes, Random r, String what) {
        if (m == null) {
            assertNull(t.options(), what + ": options of a table it does not hold");
            assertEquals(0, t.partitions(), what);
            assertTrue(drain(t.scan(null, null), true, what).isEmpty(), what + ": scan of a table it does not hold");
            assertThrows(IllegalArgumentException.class, () -> t.partition(0), what);
            return;
        }
        assertEquals(m.options, t.options(), what);
        assertEquals(m.parts.size(), t.partitions(), what);
        boolean hashed = !m.options.callerPlaced();
        assertEntries(expected(m.parts, null, null), drain(t.scan(null, null), hashed, what + " full scan"), what + " full scan");
        for (int i = 0; i < 4; i++) {
            byte[] from = bound(probes, r), to = bound(probes, r);
            String w = what + " scan [" + hex(from) + ", " + hex(to) + ")";
            assertEntries(expected(m.parts, from, to), drain(t.scan(from, to), hashed, w), w);
        }
        for (int p = 0; p < m.parts.size(); p++) {
            Partition part = t.partition(p);
            TreeMap<byte[], byte[]> pm = m.parts.get(p);
            String wp = what + " partition " + p;
            assertEquals(p, part.index(), wp);
            assertEquals(pm.size(), part.size(), wp + " size");
            assertEntries(expected(List.of(pm), null, null), drain(part.scan(null, null), true, wp), wp);
            byte[] from = bound(probes, r), to = bound(probes, r);
            assertEntries(expected(List.of(pm), from, to), drain(part.scan(from, to), true, wp), wp + " range");
        }
        for (byte[] k : probes) {
            if (hashed) {
                int p = KeyHash.partition(k, m.parts.size());
                assertArrayEquals(m.parts.get(p).get(k), t.get(k), what + " get " + hex(k));
                assertArrayEquals(m.parts.get(p).get(k), t.partition(p).get(k), what + " partition get " + hex(k));
            } else {
                int p = r.nextInt(m.parts.size());
                assertArrayEquals(m.parts.get(p).get(k), t.partition(p).get(k), what + " partition " + p + " get " + hex(k));
            }
        }
    }

    /** A scan bound: open, a known key, a known key one byte longer or shorter (between keys), or a prefix's end. */
    static byte[] bound(List<byte[]> keys, Random r) {
        int c = r.nextInt(8);
        if (c == 0) return null;
        byte[] k = keys.get(r.nextInt(keys.size()));
        if (c == 1) return Arrays.copyOf(k, k.length + 1);
        if (c == 2 && k.length > 0) return Arrays.copyOf(k, k.length - 1);
        if (c == 3) { // a prefix scan's end: the key then 0xFF bytes, longer than any key may be
            byte[] b = Arrays.copyOf(k, k.length + 300);
            Arrays.fill(b, k.length, b.length, (byte) 0xFF);
            return b;
        }
        return k;
    }

    static String hex(byte[] b) {
        if (b == null) return "null";
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < Math.min(b.length, 12); i++) sb.append(String.format("%02x", b[i]));
        if (b.length > 12) sb.append("..(").append(b.length).append(')');
        return sb.length() == 0 ? "<empty>" : sb.toString();
    }

    private ReadModel() {
    }
}
