package dev.varve.cli;

import java.io.PrintWriter;
import java.util.List;
import java.util.Map;

/** Prints a command's result: as JSON ({@code --json}), or as indented "key: value" lines for people. */
final class Report {
    private Report() {
    }

    static void print(PrintWriter out, Map<String, ?> report, boolean json) {
        if (json) out.println(Json.of(report));
        else text(out, report, "");
        out.flush();
    }

    private static void text(PrintWriter out, Map<String, ?> m, String indent) {
        for (Map.Entry<String, ?> e : m.entrySet()) {
            Object v = e.getValue();
            if (v instanceof Map<?, ?> sub && sub.isEmpty()) {
                out.println(indent + e.getKey() + ": {}");
            } else if (v instanceof Map<?, ?> sub) {
                out.println(indent + e.getKey() + ":");
                @SuppressWarnings("unchecked") Map<String, ?> s = (Map<String, ?>) sub;
                text(out, s, indent + "  ");
            } else if (v instanceof List<?> l && !l.isEmpty() && l.get(0) instanceof Map) {
                out.println(indent + e.getKey() + ":");
                for (Object item : l) {
                    @SuppressWarnings("unchecked") Map<String, ?> s = (Map<String, ?>) item;
                    out.println(indent + "  - " + inline(s));
                }
            } else {
                out.println(indent + e.getKey() + ": " + (v instanceof long[] a ? java.util.Arrays.toString(a) : v));
            }
        }
    }

    private static String inline(Map<String, ?> m) {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, ?> e : m.entrySet()) {
            if (sb.length() > 0) sb.append(", ");
            sb.append(e.getKey()).append(' ').append(e.getValue() instanceof long[] a ? java.util.Arrays.toString(a) : e.getValue());
        }
        return sb.toString();
    }
}
