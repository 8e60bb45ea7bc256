package dev.varve.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The README's configuration table is what embedders size their stores by: each row's default must be what the
 * builder gives, and each numeric range must be exactly what {@code build()} accepts (its ends taken, one step past
 * either end refused naming the field). Read from README.md itself so the table cannot drift from the code.
 */
class ReadmeConfigTableTest {
    private static final Pattern ROW = Pattern.compile("^\\| `(\\w+)` \\| ([^|]*) \\| ([^|]*) \\|");
    private static final String QUANTITY = "([0-9][0-9.]*)\\s*(KiB|MiB|GiB|TiB|ms|s|h|d)?";
    private static final Pattern RANGE = Pattern.compile(QUANTITY + "–" + QUANTITY);

    @TempDir
    Path dir;

    /** field → {default, range} cells of the README's configuration table. */
    static Map<String, String[]> readmeTable() throws IOException {
        Path root = Path.of("").toAbsolutePath();
        while (root != null && !Files.exists(root.resolve("README.md"))) root = root.getParent();
        assertTrue(root != null, "README.md not found");
        String text = Files.readString(root.resolve("README.md"));
        int start = text.indexOf("\n## Configuration");
        String section = text.substring(start, text.indexOf("\n## ", start + 1));
        Map<String, String[]> rows = new LinkedHashMap<>();
        for (String line : section.split("\n")) {
            Matcher m = ROW.matcher(line);
            if (m.find()) rows.put(m.group(1), new String[] {m.group(2).trim(), m.group(3).trim()});
        }
        return rows;
    }

    /** A cell's quantity in the builder's type: bytes, a Duration, an int or a double. */
    static Object quantity(String number, String unit, Class<?> type) {
        if (type == Duration.class) {
            long n = Long.parseLong(number);
            return switch (unit) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "h" -> Duration.ofHours(n);
                case "d" -> Duration.ofDays(n);
                default -> throw new AssertionError("no duration unit in " + number + " " + unit);
            };
        }
        if (type == double.class) return Double.parseDouble(number);
        if (type == String.class) return "n".repeat(Integer.parseInt(number));   // name: a length in characters
        long n = Long.parseLong(number);
        int shift = unit == null ? 0 : switch (unit) {
            case "KiB" -> 10;
            case "MiB" -> 20;
            case "GiB" -> 30;
            case "TiB" -> 40;
            default -> throw new AssertionError("no byte unit " + unit);
        };
        return type == int.class ? (Object) (int) (n << shift) : (Object) (n << shift);
    }

    private static Method setter(String field) {
        for (Method m : VarveConfig.Builder.class.getMethods()) {
            if (m.getName().equals(field) && m.getParameterCount() == 1) return m;
        }
        throw new AssertionError("the README's table names " + field + ", which the builder lacks");
    }

    private VarveConfig build(String field, Object value) throws Throwable {
        VarveConfig.Builder b = VarveConfig.builder().path(dir);
        try {
            setter(field).invoke(b, value);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
        return b.build();
    }

    /** One step past an end, by the type's granularity (a power of two for pageSize, 4 KiB for sizes). */
    private static Object beyond(String field, Object end, boolean below) {
        if (field.equals("pageSize")) return below ? (int) end / 2 : (int) end * 2;
        if (end instanceof String s) return below ? s.substring(1) : s + "n";
        if (end instanceof Duration d) return below ? d.minusMillis(1) : d.plusMillis(1);
        if (end instanceof Double d) return below ? d - 0.01 : d + 0.01;
        if (end instanceof Long l) return below ? l - 4096 : l + 4096;
        return below ? (int) end - 1 : (int) end + 1;
    }

    @Test
    void everyDefaultIsTheBuildersAndEveryRangeIsWhatBuildAccepts() throws Throwable {
        Map<String, String[]> table = readmeTable();
        assertTrue(table.size() >= 20, "the table was not found whole: " + table.keySet());
        VarveConfig defaults = VarveConfig.builder().path(dir).build();
        List<String> checked = new ArrayList<>();
        for (Map.Entry<String, String[]> row : table.entrySet()) {
            String field = row.getKey();
            Object actual = VarveConfig.class.getMethod(field).invoke(defaults);
            String def = row.getValue()[0];
            Class<?> type = setter(field).getParameterTypes()[0];
            Matcher enumDefault = Pattern.compile("^`(\\w+)`$").matcher(def);
            Matcher numericDefault = Pattern.compile("^" + QUANTITY + "$").matcher(def);
            if (enumDefault.find()) {
                assertEquals(enumDefault.group(1), String.valueOf(actual), field + "'s default");
            } else if (numericDefault.find()) {
                assertEquals(quantity(numericDefault.group(1), numericDefault.group(2), type), actual, field + "'s default");
            }
            Matcher range = RANGE.matcher(row.getValue()[1]);
            if (!range.find() || field.equals("retention")) continue;
            Object min = quantity(range.group(1), range.group(2), type);
            Object max = quantity(range.group(3), range.group(4), type);
            for (Object end : List.of(min, max)) {
                try {
                    build(field, end);
                } catch (IllegalArgumentException e) {
                    fail("the README says " + field + " may be " + end + ", build() refused it: " + e.getMessage());
                }
            }
            for (boolean below : new boolean[] {true, false}) {
                Object out = beyond(field, below ? min : max, below);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> build(field, out),
                        field + " = " + out + " is outside the README's range but was accepted");
                assertTrue(e.getMessage().contains(field), e.getMessage());
            }
            checked.add(field);
        }
        assertTrue(checked.size() >= 17, "ranges checked: " + checked);
    }

    @Test
    void retentionTakesAsManyLevelsAsTheTableSays() throws IOException {
        Matcher m = RANGE.matcher(readmeTable().get("retention")[1]);
        assertTrue(m.find());
        assertEquals(Integer.parseInt(m.group(3)), RankTreePolicy.MAX_LEVELS);
        assertEquals(1, Integer.parseInt(m.group(1)));
    }
}
