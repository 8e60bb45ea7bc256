package dev.varve.benchmarks;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/** A plain-text table: a header row, then rows of a label and one cell per column, right-aligned. */
final class TextTable {
    private final List<String[]> rows = new ArrayList<>();
    private final int columns;

    TextTable(String corner, List<String> headings) {
        columns = headings.size();
        String[] h = new String[columns + 1];
        h[0] = corner;
        for (int i = 0; i < columns; i++) h[i + 1] = headings.get(i);
        rows.add(h);
    }

    TextTable row(String label, List<String> cells) {
        if (cells.size() != columns) throw new IllegalArgumentException(label + ": " + cells.size() + " cells for " + columns + " columns");
        String[] r = new String[columns + 1];
        r[0] = label;
        for (int i = 0; i < columns; i++) r[i + 1] = cells.get(i);
        rows.add(r);
        return this;
    }

    void print(PrintStream out) {
        int[] width = new int[columns + 1];
        for (String[] r : rows) for (int i = 0; i < r.length; i++) width[i] = Math.max(width[i], r[i].length());
        for (String[] r : rows) {
            StringBuilder sb = new StringBuilder(String.format("%-" + width[0] + "s", r[0]));
            for (int i = 1; i < r.length; i++) sb.append("  ").append(String.format("%" + width[i] + "s", r[i]));
            out.println(sb);
        }
    }
}
