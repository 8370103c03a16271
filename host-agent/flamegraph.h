/* SPDX-License-Identifier: MIT */
/*
 * flamegraph.h - a self-contained interactive SVG flame graph from folded stacks.
 *
 * Input: the lines of `report folded` ("outer;...;inner COUNT"). They are merged
 * into a tree (a node per distinct path from the outermost frame), each node
 * counting the events of every stack through it. Output: one SVG, root at the
 * bottom, each node a <g class="f"> with a <title> "FUNCTION (N events, P%)",
 * a <rect> as wide as its share and the function name when it fits; a frame
 * narrower than 0.1 pixel is left out with its subtree (its events stay in its
 * parent's width, as flamegraph.pl's --minwidth default does), and when that still
 * leaves more than 8000 frames the narrowest go too (a browser takes minutes over
 * tens of thousands); the root's data-min-count says the fewest events a drawn
 * frame has. A small inline
 * script (no external resource) makes it interactive: hover shows the title and the
 * path in the status line, a click zooms to that frame (its ancestors stay, full
 * width), "Reset zoom" or Escape goes back, "Search" (or Ctrl-F) takes a regular
 * expression, highlights the matching frames and prints the share of events under
 * them.
 */
#ifndef HA_FLAMEGRAPH_H
#define HA_FLAMEGRAPH_H

#include <glib.h>
#include <stdbool.h>

/* Append the SVG of @folded to @out, @title at the top. False with @error when a
 * line is not "STACK COUNT". */
bool ha_flamegraph_svg(const char *folded, const char *title, GString *out,
		       GError **error);

#endif /* HA_FLAMEGRAPH_H */
