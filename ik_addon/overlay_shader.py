# SPDX-License-Identifier: GPL-3.0-or-later
"""The overlay's one shader: lines of a width in pixels, dashed or not, and triangles, in
one indexed batch.

Every vertex names its position by indices into a small array of points (``points``,
``vec4``), so a batch holds only the topology of a set of chains and a changed pose only
uploads the points. Lines are quads widened in the vertex shader (no geometry shader: the
same source builds for OpenGL, Vulkan and Metal, Blender 4.2 on), anti-aliased over one
pixel at their edges like Blender's polyline shaders; dashes are cut in the fragment shader
(as long as the gaps, evenly spaced in world space); triangles have width 0. Colours are
sRGB, converted for the framebuffer like Blender's built-in shaders do (``srgbTarget``).

A batch draws chains of one armature (world matrix: ``armature``). ``points`` holds, for
each chain, its joints in armature space (w = 0), its target and pole in world space
(w = -1), and one *info* point:
``(effector index, target index, miss threshold, cross half size)``; the threshold is < 0
when the target is out of reach (always missed), 0 when the chain's influence is partial
(never flagged), else the distance in metres beyond which the shown effector missed the
target (:mod:`.shown`'s rule).

Vertex attributes (4 floats each):

* ``ends`` — point indices ``i, j``, this vertex's blend ``t`` (position
  ``mix(world(i), world(j), t)``) and the blend of the line's other end;
* ``shape`` — the side the vertex is pushed to (±1, already turned for a line's second
  end), the line width in pixels (0: a triangle vertex), the chain's info point index, and
  the vertex's side across the line (±1, for anti-aliasing);
* ``colour`` — RGBA; ``alt`` — RGBA when the chain missed its target;
* ``arm`` — for the cross's arms: the world axis (0, 1, 2; -1 for anything else), the signs
  of this end and of the other end (× the cross half size, from the effector); w: the
  number of dashes and gaps of a dashed line (0: solid).
"""

from __future__ import annotations

import gpu

#: Points per batch (``vec4`` uniforms: 2 KiB, within every backend's push-constant block).
CAPACITY = 128

_VERTEX = """
vec3 world(int k)
{
  vec4 p = points[k];
  return (p.w < 0.0) ? p.xyz : (armature * vec4(p.xyz, 1.0)).xyz;
}

void main()
{
  vec4 info = points[int(shape.z)];
  vec3 a = world(int(ends.x));
  vec3 b = world(int(ends.y));
  vec3 p = mix(a, b, ends.z);
  vec3 q = mix(a, b, ends.w);
  if (arm.x >= 0.0) {
    vec3 axis = vec3(equal(vec3(arm.x), vec3(0.0, 1.0, 2.0))) * info.w;
    p = a + axis * arm.y;
    q = a + axis * arm.z;
  }
  bool missed = info.z < 0.0 ||
                (info.z > 0.0 && distance(world(int(info.x)), world(int(info.y))) > info.z);
  vec4 here = ModelViewProjectionMatrix * vec4(p, 1.0);
  vec4 there = ModelViewProjectionMatrix * vec4(q, 1.0);
  float half_width = 0.5 * shape.y;
  float reach = (half_width > 0.0) ? half_width + 1.0 : 0.0;
  vec2 along = (there.xy / there.w - here.xy / here.w) * viewportSize;
  float length_px = length(along);
  vec2 normal = (length_px > 1e-6) ? vec2(-along.y, along.x) / length_px : vec2(0.0);
  here.xy += normal * (shape.x * reach * 2.0) / viewportSize * here.w;
  gl_Position = here;
  edge = vec2(shape.w * reach, half_width);
  dash = (arm.w > 0.0) ? ends.z * arm.w : -1.0;
  tint = missed ? alt : colour;
}
"""

_FRAGMENT = """
void main()
{
  if (dash >= 0.0 && mod(floor(dash), 2.0) > 0.5) {
    discard;
  }
  fragColor = tint;
  if (srgbTarget) {  /* sRGB colours into a linear target, as Blender's own shaders do */
    vec3 low = fragColor.rgb / 12.92;
    vec3 high = pow((fragColor.rgb + 0.055) / 1.055, vec3(2.4));
    fragColor.rgb = mix(low, high, step(0.04045, fragColor.rgb));
  }
  if (edge.y > 0.0) {
    fragColor.a *= clamp(edge.y + 0.5 - abs(edge.x), 0.0, 1.0);
  }
}
"""

ATTRIBUTES = ("ends", "shape", "colour", "alt", "arm")

#: One vertex attribute's value: 4 floats (see the module docstring).
Row = tuple[float, float, float, float]


def create() -> tuple[gpu.types.GPUShader, int]:
    """The compiled shader and the location of its ``points`` array (needs a GPU context)."""
    varyings = gpu.types.GPUStageInterfaceInfo("reach_ik_overlay_varyings")
    varyings.smooth("VEC4", "tint")
    varyings.smooth("VEC2", "edge")
    varyings.smooth("FLOAT", "dash")
    info = gpu.types.GPUShaderCreateInfo()
    info.push_constant("MAT4", "ModelViewProjectionMatrix")
    info.push_constant("VEC2", "viewportSize")
    info.push_constant("MAT4", "armature")
    info.push_constant("VEC4", "points", CAPACITY)
    info.push_constant("BOOL", "srgbTarget")  # set by Blender at every bind
    for slot, name in enumerate(ATTRIBUTES):
        info.vertex_in(slot, "VEC4", name)
    info.vertex_out(varyings)
    info.fragment_out(0, "VEC4", "fragColor")
    info.vertex_source(_VERTEX)
    info.fragment_source(_FRAGMENT)
    shader = gpu.shader.create_from_info(info)
    return shader, shader.uniform_from_name("points")


def batch(
    vertices: dict[str, list[Row]], triangles: list[tuple[int, int, int]]
) -> gpu.types.GPUBatch:
    """An indexed ``TRIS`` batch: ``vertices`` maps each attribute name to rows of 4 floats,
    ``triangles`` index them."""
    fmt = gpu.types.GPUVertFormat()
    for name in ATTRIBUTES:
        fmt.attr_add(id=name, comp_type="F32", len=4, fetch_mode="FLOAT")
    buffer = gpu.types.GPUVertBuf(fmt, len(vertices["ends"]))
    for name in ATTRIBUTES:
        buffer.attr_fill(name, vertices[name])
    index = gpu.types.GPUIndexBuf(type="TRIS", seq=triangles)
    return gpu.types.GPUBatch(type="TRIS", buf=buffer, elem=index)
