package dev.varve.engine;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Counts the corruption sweep's outcomes by file kind and operation, and by image, and prints them as tables. */
final class SweepTally {
    private final Map<String, EnumMap<SweepTrial.Outcome, Integer>> byKindAndOp = new LinkedHashMap<>();
    private final Map<String, EnumMap<SweepTrial.Outcome, Integer>> byImage = new LinkedHashMap<>();
    private final EnumMap<SweepTrial.Outcome, Integer> total = new EnumMap<>(SweepTrial.Outcome.class);
    private final List<SweepTrial.Result> failures = new ArrayList<>();

    void add(SweepTrial.Result r) {
        count(byKindAndOp, r.kind() + " / " + r.op(), r.outcome());
        count(byImage, r.image(), r.outcome());
        total.merge(r.outcome(), 1, Integer::sum);
        if (r.outcome() != SweepTrial.Outcome.RIGHT && r.outcome() != SweepTrial.Outcome.NAMED_ERROR) failures.add(r);
    }

    private static void count(Map<String, EnumMap<SweepTrial.Outcome, Integer>> m, String row, SweepTrial.Outcome o) {
        m.computeIfAbsent(row, k -> new EnumMap<>(SweepTrial.Outcome.class)).merge(o, 1, Integer::sum);
    }

    int count(SweepTrial.Outcome o) {
        return total.getOrDefault(o, 0);
    }

    int trials() {
        return total.values().stream().mapToInt(Integer::intValue).sum();
    }

    List<SweepTrial.Result> failures() {
        return failures;
    }

    /** The kind × operation table, the per-image table and the total, then every failed trial. */
    String report() {
        StringBuilder b = new StringBuilder();
        table(b, "file kind / operation", byKindAndOp);
        b.append('\n');
        table(b, "image", byImage);
        row(b, "total", total);
        b.append('\n').append(failures.size()).append(" trial(s) neither read right nor failed naming the damaged file, by symptom:\n");
        symptoms().forEach((symptom, where) -> b.append(String.format("  %4d  %s%n        in %s%n", where.size(), symptom, new java.util.TreeSet<>(where))));
        b.append("\nevery such trial (reproduce one with -Dvarve.sweepOnly=<image:kind:op:seed>):\n");
        for (SweepTrial.Result r : failures) {
            b.append("  ").append(r.outcome()).append("  ").append(r.id()).append("\n      ").append(r.damage()).append("\n      ")
                    .append(r.detail()).append('\n');
        }
        return b.toString();
    }

    /**
     * Failures grouped by outcome and message with numbers and trial directories blanked out, each with the
     * kind/operation pairs it occurred for: the list of distinct things to fix.
     */
    private Map<String, List<String>> symptoms() {
        Map<String, List<String>> out = new java.util.TreeMap<>();
        for (SweepTrial.Result r : failures) {
            String symptom = r.outcome() + ": " + r.detail().replaceAll("/\\S*/trial-\\d+/", "").replaceAll("\\d+", "#").replaceAll("\\[[#, ]+]", "[#...]");
            out.computeIfAbsent(symptom, k -> new ArrayList<>()).add(r.kind() + "/" + r.op());
        }
        return out;
    }

    private static void table(StringBuilder b, String first, Map<String, EnumMap<SweepTrial.Outcome, Integer>> rows) {
        b.append(String.format("%-40s", first));
        for (SweepTrial.Outcome o : SweepTrial.Outcome.values()) b.append(String.format("%15s", o));
        b.append('\n');
        rows.forEach((name, counts) -> row(b, name, counts));
    }

    private static void row(StringBuilder b, String name, Map<SweepTrial.Outcome, Integer> counts) {
        b.append(String.format("%-40s", name));
        for (SweepTrial.Outcome o : SweepTrial.Outcome.values()) b.append(String.format("%15d", counts.getOrDefault(o, 0)));
        b.append('\n');
    }
}
