package dev.varve.engine;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Reads a reopened store in full and compares it with a {@link SweepModel}: every table by get of every key (present
 * or not) and by a full scan, currently and as of every snapshot the store lists; every snapshot the model calls
 * live must be listed with its rank; no snapshot the application was never given may be listed. Returns the first
 * difference, or null. Exceptions of the store propagate: the caller classifies them.
 */
final class SweepCheck {
    private SweepCheck() {
    }

    /** Null when the store holds exactly the model, else the first difference. */
    static String differences(Varve store, SweepModel model) {
        String d = tables(store::table, model.tables(), "current");
        if (d != null) return d;
        Map<Long, SnapshotInfo> listed = new TreeMap<>();
        for (SnapshotInfo s : store.snapshots()) listed.put(s.id(), s);
        for (SweepModel.Snapshot s : model.snapshots().values()) {
            if (!s.live || listed.containsKey(s.id)) continue;
            String why = "yet asOf opens it";
            try {
                store.asOf(s.id).close();
            } catch (SnapshotNotFoundException e) {
                why = "asOf says: " + e.getMessage();
            }
            return "live snapshot " + s.id + " (rank " + s.rank + ") is not listed by snapshots() (" + listed.keySet() + "), " + why;
        }
        for (SnapshotInfo info : listed.values()) {
            SweepModel.Snapshot s = model.snapshots().get(info.id());
            if (s == null) return "snapshots() lists " + info.id() + ", which was never declared (latest declared " + model.latestId() + ")";
            if (s.live && info.rank() != s.rank) return "snapshot " + s.id + " is listed with rank " + info.rank() + ", declared or raised to " + s.rank;
            try (SnapshotView v = store.asOf(s.id)) {
                d = tables(v::table, s.contents, "as of snapshot " + s.id + (s.live ? "" : " (dropped by the policy, yet listed)"));
            } catch (SnapshotNotFoundException e) {
                return "snapshot " + s.id + (s.live ? "" : ", dropped by the policy,") + " is listed by snapshots() but asOf says: " + e.getMessage();
            }
            if (d != null) return d;
        }
        return null;
    }

    /** Null when {@code tables} hold exactly {@code expected} by get and by scan, else the first difference. */
    private static String tables(Function<String, Table> tables, Map<String, TreeMap<String, byte[]>> expected, String when) {
        for (String name : SweepWorkload.TABLES) {
            Table t = tables.apply(name);
            TreeMap<String, byte[]> want = expected.get(name);
            for (int k = 0; k < SweepWorkload.KEYS; k++) {
                String key = SweepWorkload.key(k);
                byte[] w = want.get(key);
                byte[] got = t.get(SweepWorkload.utf8(key));
                if (!Arrays.equals(w, got)) return when + ", " + name + "/" + key + " by get: " + mismatch(got, w);
            }
            try (Cursor c = t.scan(null, null)) {
                Iterator<Map.Entry<String, byte[]>> it = want.entrySet().iterator();
                while (c.next()) {
                    String key = new String(c.key(), StandardCharsets.UTF_8);
                    if (!it.hasNext()) return when + ", " + name + " scan: extra key " + key + " after the last expected one";
                    Map.Entry<String, byte[]> e = it.next();
                    if (!e.getKey().equals(key)) return when + ", " + name + " scan: key " + key + " where " + e.getKey() + " was expected";
                    if (!Arrays.equals(e.getValue(), c.value())) {
                        return when + ", " + name + "/" + key + " by scan: " + mismatch(c.value(), e.getValue());
                    }
                }
                if (it.hasNext()) return when + ", " + name + " scan: ended before " + it.next().getKey();
            }
        }
        return null;
    }

    private static String mismatch(byte[] got, byte[] want) {
        if (got != null && want != null && got.length == want.length) return "another value of the expected " + want.length + " bytes";
        return (got == null ? "absent" : got.length + " bytes") + ", expected " + (want == null ? "absent" : want.length + " bytes");
    }
}
