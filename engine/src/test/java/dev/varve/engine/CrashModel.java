package dev.varve.engine;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * What a crash test expects the store to hold: one sorted map per table of every acknowledged write, plus the one
 * write that was in flight when the process died (which a recovered store holds entirely or not at all). Also
 * drives a random workload of puts, removes and atomic batches against a store, acknowledging each write in the
 * model only once the store returned.
 */
final class CrashModel {
    static final String[] TABLES = {"alpha", "beta"};
    private static final int KEYS = 400;
    private static final int LARGE_VALUE_BYTES = 20 * 1024;

    /** One change of a write; {@code value == null} removes. */
    record Change(String table, String key, byte[] value) {
    }

    /** One write as the application issued it: a single put/remove, or an atomic batch. */
    record Write(List<Change> changes, boolean batch) {
        @Override
        public String toString() {
            StringBuilder b = new StringBuilder(batch ? "batch[" : "single[");
            for (Change c : changes) b.append(c.value == null ? "remove " : "put ").append(c.table).append('/').append(c.key)
                    .append(c.value == null ? "" : " (" + c.value.length + " B)").append("; ");
            return b.append(']').toString();
        }
    }

    private final Map<String, TreeMap<String, byte[]>> tables = new TreeMap<>();
    private long acknowledged;
    private volatile Write inFlight;

    CrashModel() {
        for (String t : TABLES) tables.put(t, new TreeMap<>());
    }

    long acknowledged() {
        return acknowledged;
    }

    Write inFlight() {
        return inFlight;
    }

    /** A random write: mostly small puts, some 20 KiB values (overflow chains), removes, and batches. */
    Write next(Random rnd) {
        int n = rnd.nextInt(5) == 0 ? 2 + rnd.nextInt(5) : 1;
        List<Change> changes = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String table = TABLES[rnd.nextInt(TABLES.length)];
            String key = String.format("k%05d", rnd.nextInt(KEYS));
            if (rnd.nextInt(6) == 0) {
                changes.add(new Change(table, key, null));
            } else {
                byte[] v = new byte[rnd.nextInt(25) == 0 ? LARGE_VALUE_BYTES + rnd.nextInt(4000) : 1 + rnd.nextInt(300)];
                rnd.nextBytes(v);
                changes.add(new Change(table, key, v));
            }
        }
        return new Write(changes, n > 1);
    }

    /**
     * Runs {@code w} against the store and, once it returned, records it as acknowledged. On failure the write is
     * recorded as the one in flight and the exception rethrown.
     */
    void apply(Varve store, Write w) {
        inFlight = w;
        if (w.batch) {
            store.write(b -> {
                for (Change c : w.changes) {
                    if (c.value == null) b.remove(c.table, bytes(c.key));
                    else b.put(c.table, bytes(c.key), c.value);
                }
            });
        } else {
            Change c = w.changes.get(0);
            Table t = store.table(c.table);
            if (c.value == null) {
                boolean present = t.remove(bytes(c.key));
                if (present != tables.get(c.table).containsKey(c.key)) {
                    throw new AssertionError("remove of " + c.table + "/" + c.key + " returned " + present + " but the model says "
                            + !present + " (" + w + ")");
                }
            } else {
                t.put(bytes(c.key), c.value);
            }
        }
        applyTo(tables, w);
        acknowledged++;
        inFlight = null;
    }

    /** Runs {@code count} random writes; failures propagate. */
    void run(Varve store, Random rnd, int count) {
        for (int i = 0; i < count; i++) apply(store, next(rnd));
    }

    /**
     * Compares every table of {@code store} with the acknowledged writes, and, failing that, with the acknowledged
     * writes plus the one in flight; throws an error describing the first differences otherwise.
     */
    void verify(Varve store, String when) {
        Map<String, TreeMap<String, byte[]>> actual = read(store);
        if (same(actual, tables)) return;
        Write w = inFlight;
        if (w != null) {
            Map<String, TreeMap<String, byte[]>> withInFlight = copy(tables);
            applyTo(withInFlight, w);
            if (same(actual, withInFlight)) return;
        }
        throw new AssertionError(when + ": the store differs from the " + acknowledged + " acknowledged writes"
                + (w == null ? "" : " (with or without the in-flight " + w + ")") + ": " + diff(actual, tables));
    }

    /** Forgets the in-flight write after the store was found to hold it (or not) — call after {@link #verify}. */
    void settle(Varve store) {
        Write w = inFlight;
        if (w == null) return;
        Map<String, TreeMap<String, byte[]>> actual = read(store);
        if (!same(actual, tables)) applyTo(tables, w);
        inFlight = null;
    }

    /** A copy of the acknowledged state (the model of a snapshot declared now). */
    Map<String, TreeMap<String, byte[]>> state() {
        return copy(tables);
    }

    /** Throws unless the tables (current, or as of a snapshot) hold exactly {@code expected}. */
    static void verify(java.util.function.Function<String, Table> tables, Map<String, TreeMap<String, byte[]>> expected, String when) {
        Map<String, TreeMap<String, byte[]>> actual = read(tables);
        if (!same(actual, expected)) throw new AssertionError(when + ": " + diff(actual, expected));
    }

    private static Map<String, TreeMap<String, byte[]>> read(Varve store) {
        return read(store::table);
    }

    private static Map<String, TreeMap<String, byte[]>> read(java.util.function.Function<String, Table> tables) {
        Map<String, TreeMap<String, byte[]>> out = new TreeMap<>();
        for (String t : TABLES) {
            TreeMap<String, byte[]> m = new TreeMap<>();
            try (Cursor c = tables.apply(t).scan(null, null)) {
                while (c.next()) m.put(new String(c.key(), StandardCharsets.UTF_8), c.value());
            }
            out.put(t, m);
        }
        return out;
    }

    private static void applyTo(Map<String, TreeMap<String, byte[]>> tables, Write w) {
        for (Change c : w.changes) {
            if (c.value == null) tables.get(c.table).remove(c.key);
            else tables.get(c.table).put(c.key, c.value);
        }
    }

    private static Map<String, TreeMap<String, byte[]>> copy(Map<String, TreeMap<String, byte[]>> m) {
        Map<String, TreeMap<String, byte[]>> out = new TreeMap<>();
        m.forEach((t, kv) -> out.put(t, new TreeMap<>(kv)));
        return out;
    }

    private static boolean same(Map<String, TreeMap<String, byte[]>> a, Map<String, TreeMap<String, byte[]>> b) {
        for (String t : TABLES) {
            TreeMap<String, byte[]> x = a.get(t);
            TreeMap<String, byte[]> y = b.get(t);
            if (x.size() != y.size()) return false;
            for (var e : x.entrySet()) if (!Arrays.equals(e.getValue(), y.get(e.getKey()))) return false;
        }
        return true;
    }

    private static String diff(Map<String, TreeMap<String, byte[]>> actual, Map<String, TreeMap<String, byte[]>> expected) {
        StringBuilder b = new StringBuilder();
        int shown = 0;
        for (String t : TABLES) {
            TreeMap<String, byte[]> x = actual.get(t);
            TreeMap<String, byte[]> y = expected.get(t);
            b.append(t).append(": ").append(x.size()).append(" keys, expected ").append(y.size()).append("; ");
            TreeMap<String, Boolean> keys = new TreeMap<>();
            x.keySet().forEach(k -> keys.put(k, true));
            y.keySet().forEach(k -> keys.put(k, true));
            for (String k : keys.keySet()) {
                byte[] got = x.get(k);
                byte[] want = y.get(k);
                if (Arrays.equals(got, want)) continue;
                if (shown++ >= 8) break;
                b.append(k).append(got == null ? " missing" : want == null ? " unexpected" : " has a different value (" + got.length + " B, expected "
                        + want.length + " B)").append("; ");
            }
        }
        return b.toString();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
