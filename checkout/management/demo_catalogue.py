"""The demo catalogue: the products `manage.py seed_demo` puts in the shop (once each)."""

from __future__ import annotations

from decimal import Decimal

DEMO_PRODUCTS: list[dict[str, object]] = [
    {
        "slug": "taza-talavera",
        "name": "Taza de talavera poblana",
        "name_en": "Talavera mug from Puebla",
        "description": (
            "Taza de barro esmaltado pintada a mano en azul cobalto por artesanos de Puebla. "
            "Capacidad de 350 ml, ideal para café de olla o chocolate caliente."
        ),
        "description_en": (
            "Glazed earthenware mug hand-painted in cobalt blue by artisans in Puebla. "
            "Holds 350 ml, perfect for café de olla or hot chocolate."
        ),
        "price": Decimal("289.00"),
        "image": "img/products/taza-talavera.svg",
        "stock": 24,
        "active": True,
    },
    {
        "slug": "olla-barro-negro",
        "name": "Olla de barro negro",
        "name_en": "Barro negro clay pot",
        "description": (
            "Olla bruñida a mano con piedra de cuarzo y calada con motivos florales en "
            "San Bartolo Coyotepec, Oaxaca. Pieza decorativa; no apta para cocinar."
        ),
        "description_en": (
            "Pot hand-burnished with a quartz stone and cut with floral openwork in "
            "San Bartolo Coyotepec, Oaxaca. Decorative piece; not for cooking."
        ),
        "price": Decimal("1450.00"),
        "image": "img/products/olla-barro-negro.svg",
        "stock": 6,
        "active": True,
    },
    {
        "slug": "canasta-palma",
        "name": "Canasta de palma tejida",
        "name_en": "Woven palm basket",
        "description": (
            "Canasta tejida a mano con palma natural y franjas teñidas de rosa mexicano y "
            "verde en la Mixteca. Resistente y ligera, perfecta para el mercado o el pan."
        ),
        "description_en": (
            "Basket hand-woven from natural palm with stripes dyed Mexican pink and green "
            "in the Mixteca region. Sturdy and light, perfect for the market or for bread."
        ),
        "price": Decimal("149.00"),
        "image": "img/products/canasta-palma.svg",
        "stock": 40,
        "active": True,
    },
    {
        "slug": "blusa-bordada",
        "name": "Blusa bordada de Oaxaca",
        "name_en": "Embroidered Oaxacan blouse",
        "description": (
            "Blusa de manta de algodón con flores bordadas a mano en el cuello y las mangas. "
            "Cada pieza toma alrededor de dos semanas de trabajo; talla unitaria."
        ),
        "description_en": (
            "Cotton muslin blouse with flowers hand-embroidered on the neckline and sleeves. "
            "Each piece takes about two weeks of work; one size fits most."
        ),
        "price": Decimal("1290.00"),
        "image": "img/products/blusa-bordada.svg",
        "stock": 12,
        "active": True,
    },
    {
        "slug": "alebrije-jaguar",
        "name": "Alebrije de jaguar",
        "name_en": "Jaguar alebrije",
        "description": (
            "Jaguar tallado en madera de copal y pintado a mano con pigmentos brillantes en "
            "San Martín Tilcajete. Pieza única firmada por el artesano."
        ),
        "description_en": (
            "Jaguar carved from copal wood and hand-painted with bright pigments in "
            "San Martín Tilcajete. One-of-a-kind piece signed by the artisan."
        ),
        "price": Decimal("2890.00"),
        "image": "img/products/alebrije-jaguar.svg",
        "stock": 0,
        "active": True,
    },
    {
        "slug": "rebozo-seda",
        "name": "Rebozo de seda de Santa María del Río",
        "name_en": "Silk rebozo from Santa María del Río",
        "description": (
            "Rebozo grande de seda teñida con la técnica de jaspe (ikat) y rapacejo anudado "
            "a mano. Tejido en telar de cintura durante varios meses."
        ),
        "description_en": (
            "Large silk rebozo dyed with the jaspe (ikat) technique, with a hand-knotted "
            "fringe. Woven on a backstrap loom over several months."
        ),
        "price": Decimal("12500.00"),
        "image": "img/products/rebozo-seda.svg",
        "stock": 2,
        "active": True,
    },
    {
        "slug": "molcajete",
        "name": "Molcajete de piedra volcánica",
        "name_en": "Volcanic stone molcajete",
        "description": (
            "Molcajete de basalto labrado a mano, con tejolote incluido. "
            "Ideal para salsas martajadas y guacamole."
        ),
        "description_en": (
            "Hand-carved basalt mortar, pestle (tejolote) included. "
            "Ideal for chunky salsas and guacamole."
        ),
        "price": Decimal("890.00"),
        "image": "img/products/molcajete.svg",
        "stock": 9,
        "active": True,
    },
    {
        "slug": "cafe-chiapas",
        "name": "Café de altura de Chiapas",
        "name_en": "Chiapas high-altitude coffee",
        "description": (
            "Café arábica de altura cultivado bajo sombra por cooperativas de la Sierra "
            "Madre de Chiapas. Tueste medio, en grano, bolsa de 500 g."
        ),
        "description_en": (
            "High-altitude, shade-grown arabica from cooperatives in the Sierra Madre of "
            "Chiapas. Medium roast, whole bean, 500 g bag."
        ),
        "price": Decimal("229.00"),
        "image": "img/products/cafe-chiapas.svg",
        "stock": 35,
        "active": True,
    },
]
