package dev.varve.server;

import dev.varve.engine.Cursor;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Checks on received stores. */
public final class StoreAssert {
    private StoreAssert() {
    }

    /** Opens {@code dir} as a store and checks it holds exactly {@code model}, table by table, key for key. Returns the entry count. */
    public static long assertStoreEquals(Map<String, TreeMap<String, byte[]>> model, Path dir) {
        try (Varve s = Varve.open(SmallStore.config(dir).build())) {
            return assertTablesEqual(model, s.tables(), s::table, dir.toString());
        }
    }

    /** Checks that the tables {@code names}, read through {@code tables}, hold exactly {@code model}. Returns the entry count. */
    public static long assertTablesEqual(Map<String, TreeMap<String, byte[]>> model, List<String> names, Function<String, Table> tables, String what) {
        long n = 0;
        assertEquals(new ArrayList<>(model.keySet()), names, "tables of " + what);
        for (Map.Entry<String, TreeMap<String, byte[]>> t : model.entrySet()) {
            Iterator<Map.Entry<String, byte[]>> expected = t.getValue().entrySet().iterator();
            try (Cursor c = tables.apply(t.getKey()).scan(null, null)) {
                while (c.next()) {
                    String key = new String(c.key(), StandardCharsets.UTF_8);
                    assertTrue(expected.hasNext(), what + ": table " + t.getKey() + " holds " + key + " that the model does not");
                    Map.Entry<String, byte[]> e = expected.next();
                    assertEquals(e.getKey(), key, what + ": table " + t.getKey());
                    assertTrue(Arrays.equals(e.getValue(), c.value()), what + ": value of " + t.getKey() + "/" + key + " differs");
                    n++;
                }
            }
            assertFalse(expected.hasNext(), what + ": table " + t.getKey() + " lacks entries of the model");
        }
        return n;
    }

    /**
     * Checks that the tables {@code names}, read through {@code tables}, hold exactly what {@code expectedNames} read
     * through {@code expected} hold: the same tables, key for key, value for value. Returns the entry count.
     */
    public static long assertStoresEqual(List<String> expectedNames, Function<String, Table> expected, List<String> names,
                                         Function<String, Table> tables, String what) {
        long n = 0;
        assertEquals(expectedNames, names, "tables of " + what);
        for (String t : expectedNames) {
            try (Cursor e = expected.apply(t).scan(null, null); Cursor c = tables.apply(t).scan(null, null)) {
                while (e.next()) {
                    String key = HexFormat.of().formatHex(e.key());
                    assertTrue(c.next(), what + ": table " + t + " lacks key " + key + " and every key after it");
                    assertEquals(key, HexFormat.of().formatHex(c.key()), what + ": table " + t);
                    assertTrue(Arrays.equals(e.value(), c.value()), what + ": value of " + t + "/" + key + " differs");
                    n++;
                }
                assertFalse(c.next(), what + ": table " + t + " holds keys after the last one expected");
            }
        }
        return n;
    }

    /** {@code dir} must refuse to open, saying it is an unfinished transfer. */
    public static void assertRefusesToOpen(Path dir) {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Varve.open(SmallStore.config(dir).build()).close());
        assertTrue(e.getMessage().contains("unfinished transfer"), e.getMessage());
    }
}
